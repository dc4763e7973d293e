package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/sandbox/native"
)

// addVars are values for every variable the catalogue's entries reference,
// made of existing directories where they name one.
func addVars(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	vars := map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_test", "BRAVE_API_KEY": "bk_test"}
	for _, v := range []string{"FILESYSTEM_ROOT", "MEMORY_DIR", "GIT_REPOSITORY"} {
		p := filepath.Join(dir, strings.ToLower(v))
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		vars[v] = p
	}
	return vars
}

// stubUvx puts a uvx on PATH when there is none, so that check's command
// lookup passes for the PyPI entries (nothing runs it).
func stubUvx(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("uvx"); err == nil {
		return
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "uvx"), []byte("#!/bin/sh\necho stub >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func loadWith(t *testing.T, path string, vars map[string]string) *config.Config {
	t.Helper()
	cfg, err := config.Load(path, &config.Options{LookupEnv: func(v string) (string, bool) {
		s, ok := vars[v]
		return s, ok
	}})
	if err != nil {
		t.Fatalf("%s does not load: %v", path, err)
	}
	return cfg
}

var pinnedRE = regexp.MustCompile(`@[0-9]+\.[0-9]+\.[0-9]+$`)

// TestCLIAddCatalogue: every catalogue entry, added to a configuration
// that does not exist yet, makes a file that loads with its variables set
// (and only then: each variable it prints is needed), holds one server
// pinned to an exact version with a strict sandbox and a description, and
// passes toolhost check; all of them together pass check too.
func TestCLIAddCatalogue(t *testing.T) {
	cat, err := loadCatalogue()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"brave", "fetch", "filesystem", "git", "github", "memory", "sequential-thinking", "time"}
	if got := slices.Sorted(func(yield func(string) bool) {
		for n := range cat {
			if !yield(n) {
				return
			}
		}
	}); !slices.Equal(got, want) {
		t.Fatalf("catalogue %v, want %v", got, want)
	}
	vars := addVars(t)
	for k, v := range vars {
		t.Setenv(k, v)
	}
	stubUvx(t)
	// check plans each strict sandbox: where the kernel cannot build one,
	// it fails, rightly; the loading is still tested.
	_, sandboxErr := (&native.Spec{Name: "probe", Mode: native.ModeStrict, Command: testutil.Fixture(t)}).Plan()
	all := filepath.Join(t.TempDir(), "all.toml")
	for _, name := range want {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "toolhost.toml")
			code, out, errs := runCLI("--config", path, "add", name)
			if code != exitOK || !strings.Contains(out, "added [servers."+name+"] to "+path) {
				t.Fatalf("exit %d: %s\n%s", code, out, errs)
			}
			cfg := loadWith(t, path, vars)
			s := cfg.Servers[name]
			if len(cfg.Backends()) != 1 || s == nil {
				t.Fatalf("backends %v", cfg.Backends())
			}
			if s.Sandbox != "strict" || s.Description == "" {
				t.Errorf("sandbox %q, description %q", s.Sandbox, s.Description)
			}
			pinned := slices.ContainsFunc(s.Args, func(a string) bool { return pinnedRE.MatchString(a) })
			if !pinned {
				t.Errorf("no argument pinned to a version: %q", s.Args)
			}
			// Every variable printed is referenced, and the file does
			// not load without it.
			for _, v := range slices.Sorted(func(yield func(string) bool) {
				for k := range cat[name].Vars {
					if !yield(k) {
						return
					}
				}
			}) {
				if !strings.Contains(errs, "  "+v+": ") {
					t.Errorf("stderr does not say to set %s:\n%s", v, errs)
				}
				without := map[string]string{}
				for k, val := range vars {
					if k != v {
						without[k] = val
					}
				}
				if _, err := config.Load(path, &config.Options{LookupEnv: func(k string) (string, bool) { s, ok := without[k]; return s, ok }}); err == nil || !strings.Contains(err.Error(), v+" is not set") {
					t.Errorf("without %s: %v", v, err)
				}
			}
			if sandboxErr != nil {
				t.Logf("check not run: the native sandbox cannot run here: %v", sandboxErr)
			} else if code, out, errs := runCLI("--config", path, "check"); code != exitOK {
				t.Fatalf("check: exit %d:\n%s\n%s", code, out, errs)
			}
			if code, out, errs := runCLI("--config", all, "add", name); code != exitOK {
				t.Fatalf("add to all.toml: exit %d: %s\n%s", code, out, errs)
			}
		})
	}
	if cfg := loadWith(t, all, vars); len(cfg.Servers) != len(want) {
		t.Fatalf("all.toml: %v", cfg.Backends())
	}
	if sandboxErr != nil {
		return
	}
	if code, out, errs := runCLI("--config", all, "check"); code != exitOK {
		t.Fatalf("check all.toml: exit %d:\n%s\n%s", code, out, errs)
	}
}

// TestCLIAddList: add without NAME lists the catalogue, aliases included;
// an unknown NAME is a usage error naming the catalogue.
func TestCLIAddList(t *testing.T) {
	code, out, errs := runCLI("--config", filepath.Join(t.TempDir(), "none.toml"), "add")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, w := range []string{"NAME", "brave (brave-search)", "filesystem", "sequential-thinking", "@modelcontextprotocol/server-filesystem 2026.8.31"} {
		if !strings.Contains(out, w) {
			t.Errorf("listing lacks %q:\n%s", w, out)
		}
	}
	code, _, errs = runCLI("--config", filepath.Join(t.TempDir(), "none.toml"), "add", "nope")
	if code != exitUsage || !strings.Contains(errs, `"nope" is not in the catalogue: brave, fetch, filesystem`) {
		t.Fatalf("unknown name: exit %d: %s", code, errs)
	}
}

// TestCLIAddRefuses: a name already in the file (a server, or a plugin) is
// refused with its line and the file is left as it was; --as picks
// another name; an alias adds the entry under its catalogue name; a file
// that does not load is not touched; --dry-run changes nothing.
func TestCLIAddRefuses(t *testing.T) {
	const body = "# mine\n[servers.fixture]\ncommand = \"@FIXTURE@\"\n\n[plugins.memory]\npath = \"x.wasm\"\n"
	path := writeConfig(t, body)
	before, _ := os.ReadFile(path)
	for _, c := range []struct{ name, line string }{{"fixture", ":2: "}, {"memory", ":5: "}} {
		code, _, errs := runCLI("--config", path, "add", "time", "--as", c.name)
		if code != exitUsage || !strings.Contains(errs, path+c.line+`a backend named "`+c.name+`" is already there`) {
			t.Errorf("add %s: exit %d: %s", c.name, code, errs)
		}
	}
	code, _, errs := runCLI("--config", path, "add", "memory")
	if code != exitUsage || !strings.Contains(errs, `:5: a backend named "memory"`) {
		t.Errorf("add memory: exit %d: %s", code, errs)
	}
	if code, out, errs := runCLI("--config", path, "add", "memory", "--dry-run", "--as", "mem"); code != exitOK || !strings.Contains(out, "[servers.mem]\n") {
		t.Errorf("dry run: exit %d: %s\n%s", code, out, errs)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatalf("the file changed:\n%s", after)
	}
	for _, bad := range []string{"a__b", "", "x y", strings.Repeat("a", 65), "a.b", "a]"} {
		if code, _, errs := runCLI("--config", path, "add", "memory", "--as="+bad); code != exitUsage || (bad != "" && !strings.Contains(errs, "is not a backend name")) {
			t.Errorf("--as %q: exit %d: %s", bad, code, errs)
		}
	}
	if code, out, errs := runCLI("--config", path, "add", "brave-search"); code != exitOK || !strings.Contains(out, "[servers.brave]") {
		t.Errorf("alias: exit %d: %s\n%s", code, out, errs)
	}
	after, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(after), string(before)+"\n# Added by toolhost add brave") {
		t.Errorf("not appended after the old content:\n%s", after)
	}

	broken := writeConfig(t, "[servers.a]\ncommand = 3\n")
	if code, _, errs := runCLI("--config", broken, "add", "time"); code != exitUsage || !strings.Contains(errs, "does not load now; fix it first") || !strings.Contains(errs, "servers.a.command") {
		t.Errorf("broken file: exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(broken); string(b) != "[servers.a]\ncommand = 3\n" {
		t.Errorf("the broken file changed: %q", b)
	}
}

// TestCLIAddKeepsModeAndLink: the file's mode is kept, a symbolic link is
// followed (the link stays a link, its target gets the entry), and no
// temporary file is left beside it.
func TestCLIAddKeepsModeAndLink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.toml")
	if err := os.WriteFile(real, []byte("[host]\ncall_timeout = \"9s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "toolhost.toml")
	if err := os.Symlink("real.toml", link); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI("--config", link, "add", "sequential-thinking"); code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, out, errs)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", st.Mode(), err)
	}
	st, err := os.Stat(real)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v (%v), want 0600", st.Mode(), err)
	}
	cfg := loadWith(t, link, nil)
	if cfg.Servers["sequential-thinking"] == nil || cfg.Host.CallTimeout.String() != "9s" {
		t.Fatalf("result: %v %v", cfg.Backends(), cfg.Host.CallTimeout)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("files left: %v", entries)
	}
}

// TestCLIAddFromRegistry: server.json fixtures modelled on the official
// registry's entries: the first package toolhost can start is used (npm
// through npx, pypi through uvx, oci through docker with -e for each
// variable), the rest said why not; a remote when no package runs; the
// table name is the name's last part, sanitised; what cannot be
// translated is refused with every reason (exit 1).
func TestCLIAddFromRegistry(t *testing.T) {
	for _, c := range []struct {
		file, table string
		vars        []string
		want        []string
	}{
		{"filesystem", "server-filesystem", []string{"ALLOWED_DIRECTORY"}, []string{
			`args = ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "${ALLOWED_DIRECTORY}"]`,
			`env = { "LOG_LEVEL" = "${LOG_LEVEL:-info}" }`,
			"# Optional, not set: DEBUG_FILE: Where to write a debug log\n",
			`# sandbox = "strict"`,
			`description = "Filesystem"`,
		}},
		{"time", "time", nil, []string{
			`command = "uvx"`,
			`args = ["mcp-server-time@2026.10.19", "--local-timezone", "${LOCAL_TIMEZONE:-UTC}"]`,
			`# Not used: package 1 (nuget Time.Server): registryType "nuget" is not supported`,
			`# allowed_hosts = ["pypi.org:443", "files.pythonhosted.org:443"]`,
		}},
		{"weather.oci", "weather-mcp", []string{"SOURCE_PATH", "WEATHER_API_KEY"}, []string{
			`args = ["run", "-i", "--rm", "--init", "-e", "WEATHER_API_KEY", "-e", "WEATHER_UNITS", "--mount", "type=bind,src=${SOURCE_PATH},dst=/data", "ghcr.io/example/weather-mcp:0.5.0"]`,
			`env = { "WEATHER_API_KEY" = "${WEATHER_API_KEY}", "WEATHER_UNITS" = "${WEATHER_UNITS:-celsius}" }`,
		}},
		{"remote", "hybrid_mcp", []string{"API_TOKEN", "TENANT"}, []string{
			`url = "https://${TENANT}.mcp.example.com/mcp"`,
			`headers = { "Authorization" = "Bearer ${API_TOKEN}", "X-Region" = "${X_REGION:-us-east-1}" }`,
			"the package serves streamable-http, and toolhost starts only stdio servers",
			`remote 1 (sse): "sse" (the deprecated HTTP+SSE transport) is not supported`,
		}},
	} {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "toolhost.toml")
			code, out, errs := runCLI("--config", path, "add", "--from-registry", filepath.Join("..", "..", "testdata", "add", c.file+".server.json"))
			if code != exitOK {
				t.Fatalf("exit %d: %s\n%s", code, out, errs)
			}
			data, _ := os.ReadFile(path)
			for _, w := range c.want {
				if !strings.Contains(string(data), w) {
					t.Errorf("entry lacks %q:\n%s", w, data)
				}
			}
			vars := map[string]string{}
			for _, v := range c.vars {
				vars[v] = "v"
				if !strings.Contains(errs, "  "+v+": ") {
					t.Errorf("stderr does not say to set %s:\n%s", v, errs)
				}
			}
			cfg := loadWith(t, path, vars)
			if len(cfg.Backends()) != 1 || cfg.Servers[c.table] == nil {
				t.Fatalf("backends %v, want [%s]", cfg.Backends(), c.table)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "toolhost.toml")
	code, out, errs := runCLI("--config", path, "add", "--from-registry", "../../testdata/add/unsupported.server.json")
	for _, w := range []string{
		"nothing added: package 1 (mcpb ",
		`registryType "mcpb" is not supported`,
		`version "latest" is not an exact version`,
		`runtime argument "--privileged" would widen the container's rights`,
		`remote 1 (sse)`,
	} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errs)
		}
	}
	if code != exitToolError || out != "" {
		t.Errorf("exit %d, stdout %q", code, out)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a refused server.json created the file (%v)", err)
	}
	if code, _, errs := runCLI("--config", path, "add", "--from-registry", "../../testdata/add/time.server.json", "filesystem"); code != exitUsage || !strings.Contains(errs, "not both") {
		t.Errorf("NAME and --from-registry: exit %d: %s", code, errs)
	}
	dir := t.TempDir()
	for _, c := range []struct{ json, want string }{
		{"{\n  \"name\": 3\n}", "invalid JSON at line 2, column"},
		{`{"name": "io.x/!!!", "packages": []}`, `its name "io.x/!!!" gives no backend name; choose one with --as NAME`},
		{`{"name": "io.x/y"}`, "nothing added: it has no packages and no remotes"},
	} {
		file := filepath.Join(dir, "s.json")
		if err := os.WriteFile(file, []byte(c.json), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := runCLI("--config", path, "add", "--from-registry", file); code == exitOK || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d: %s", c.json, code, errs)
		}
	}
}

// hostileServer is a server.json with an injection attempt in every
// string toolhost add copies.
func hostileServer(inject string) map[string]any {
	return map[string]any{
		"name":        "io.evil/" + inject,
		"title":       inject,
		"description": inject,
		"version":     inject,
		"packages": []any{map[string]any{
			"registryType": "npm",
			"identifier":   "@evil/server",
			"version":      "1.0.0",
			"runtimeHint":  inject,
			"transport":    map[string]any{"type": "stdio"},
			"runtimeArguments": []any{
				map[string]any{"type": "named", "name": "--evil", "value": inject[:min(len(inject), maxAddString)]},
			},
			"packageArguments": []any{
				map[string]any{"type": "positional", "value": inject[:min(len(inject), maxAddString)]},
				map[string]any{"type": "positional", "valueHint": inject, "description": inject, "isRequired": true},
			},
			"environmentVariables": []any{
				map[string]any{"name": "EVIL", "description": inject, "default": inject, "isSecret": true},
			},
		}},
	}
}

// marshalRaw is json.Marshal without HTML escaping (a "<" stays one byte).
func marshalRaw(t *testing.T, v any) []byte {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return []byte(b.String())
}

// TestCLIAddRegistryHostile: a server.json that tries to break out of the
// entry (a name with "]\n[servers.x]", quotes and backslashes, control
// characters, bidirectional overrides, "${HOME}", a TOML table in a
// description) gives one table that loads, whose strings hold the input
// exactly, and whose comments are one line each; a 10 MB file is refused;
// a 3 MB description is cut in the entry, which stays small.
func TestCLIAddRegistryHostile(t *testing.T) {
	injections := []string{
		"x\"]\n[servers.pwn]\ncommand = \"/bin/sh\"\n#",
		"a\\\"b'''c\"\"\"d",
		"bell\a esc\x1b[2J cr\r nul-free del\x7f nel\u0085 ls\u2028 ps\u2029 rlo\u202e bom\ufeff",
		"$HOME $$ $ { } ${",
		"[policy]\ndefault = \"allow\"",
		"\xff\xfe invalid utf-8",
	}
	for i, inject := range injections {
		path := filepath.Join(t.TempDir(), "toolhost.toml")
		file := filepath.Join(t.TempDir(), "server.json")
		data := marshalRaw(t, hostileServer(inject))
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCLI("--config", path, "add", "--from-registry", file, "--as", "evil")
		if code != exitOK {
			t.Fatalf("%d: exit %d: %s\n%s", i, code, out, errs)
		}
		text, _ := os.ReadFile(path)
		cfg := loadWith(t, path, map[string]string{"EVIL": "e", "ARG_2": "a", strings.ToUpper(upperSnake(inject)): "h"})
		if got := cfg.Backends(); len(got) != 1 || got[0] != "evil" || cfg.Policy.Default != config.PolicyAllow || len(cfg.Policy.Allow) > 0 {
			t.Fatalf("%d: the entry broke out: backends %v, policy %+v\n%s", i, got, cfg.Policy, text)
		}
		s := cfg.Servers["evil"]
		var valid string // (JSON makes each invalid byte U+FFFD)
		if err := json.Unmarshal(marshalRaw(t, inject), &valid); err != nil {
			t.Fatal(err)
		}
		if len(s.Args) < 5 || s.Args[2] != valid || s.Args[4] != valid {
			t.Errorf("%d: args %q, want the input kept exactly", i, s.Args)
		}
		for _, line := range strings.Split(string(text), "\n") {
			if strings.HasPrefix(line, "#") || line == "" || strings.HasPrefix(line, "[servers.evil]") || regexp.MustCompile(`^[a-z_]+ = `).MatchString(line) {
				if strings.ContainsFunc(line, func(r rune) bool {
					return r < 0x20 && r != '\t' || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x202e
				}) {
					t.Errorf("%d: raw control or format character in %q", i, line)
				}
				continue
			}
			t.Errorf("%d: a line that is neither a comment nor a key: %q\n%s", i, line, text)
		}
	}

	big := hostileServer("x")
	big["description"] = strings.Repeat("A", 10<<20)
	data := marshalRaw(t, big)
	file := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "toolhost.toml")
	if code, _, errs := runCLI("--config", path, "add", "--from-registry", file); code != exitUsage || !strings.Contains(errs, "larger than 4 MiB") {
		t.Errorf("10 MB: exit %d: %s", code, errs)
	}
	big["description"] = strings.Repeat("<script>", 3<<20/8)
	data = marshalRaw(t, big)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI("--config", path, "add", "--from-registry", file); code != exitOK {
		t.Fatalf("3 MB description: exit %d: %s", code, errs)
	}
	if st, err := os.Stat(path); err != nil || st.Size() > 4<<10 {
		t.Errorf("entry of %d bytes (%v) from a 3 MB description", st.Size(), err)
	}
}

// TestCLIAddFilesystemStarts: the catalogue's filesystem entry, as added,
// starts (npx, from its cache, inside the strict sandbox) and lists its
// tools through toolhost tools; the directory it is given is the one it
// sees.
func TestCLIAddFilesystemStarts(t *testing.T) {
	testutil.NeedNpx(t)
	needSandbox(t)
	cat, err := loadCatalogue()
	if err != nil {
		t.Fatal(err)
	}
	pkg := cat["filesystem"].Args[1]
	// Fetch the package into npx's cache outside the sandbox, as the
	// sandbox tests do (inside it runs from the cache).
	if out, err := exec.Command("npm", "exec", "--yes", "--package="+pkg, "--", "true").CombinedOutput(); err != nil {
		t.Fatalf("npm exec --package=%s: %v\n%s", pkg, err, out)
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from the host"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FILESYSTEM_ROOT", root)
	path := filepath.Join(t.TempDir(), "toolhost.toml")
	if code, out, errs := runCLI("--config", path, "add", "filesystem"); code != exitOK {
		t.Fatalf("add: exit %d: %s\n%s", code, out, errs)
	}
	code, out, errs := runCLI("--config", path, "tools")
	if code != exitOK || !strings.Contains(out, "filesystem__read_text_file") || !strings.Contains(out, "filesystem__list_directory") {
		t.Fatalf("tools: exit %d:\n%s\n%s", code, out, errs)
	}
	code, out, errs = runCLI("--config", path, "call", "filesystem__read_text_file", "--args", `{"path": "/data/hello.txt"}`)
	if code != exitOK || !strings.Contains(out, "hello from the host") {
		t.Fatalf("call: exit %d:\n%s\n%s", code, out, errs)
	}
}

// TestAddReadme runs the README's "Ready-made servers" commands with the
// toolhost binary, in an empty directory (with a server.json there): the
// catalogue is listed, the dry run writes nothing, and the file made holds
// filesystem, gh and server-filesystem, and loads.
func TestAddReadme(t *testing.T) {
	root := testutil.Root()
	script := block(t, mdBlocks(t, filepath.Join(root, "README.md")), "Ready-made servers: `toolhost add`", "sh", 0)
	bin := testutil.GoBinary(t, "./cmd/toolhost")
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(root, "testdata", "add", "filesystem.server.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "server.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(dir, "toolhost")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "TOOLHOST_CONFIG=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "sequential-thinking") || strings.Count(string(out), "\n[servers.filesystem]\n") != 1 {
		t.Errorf("output:\n%s", out)
	}
	cfg := loadWith(t, filepath.Join(dir, "toolhost.toml"), map[string]string{"FILESYSTEM_ROOT": dir, "GITHUB_PERSONAL_ACCESS_TOKEN": "t", "ALLOWED_DIRECTORY": dir})
	if got := cfg.Backends(); !slices.Equal(got, []string{"filesystem", "gh", "server-filesystem"}) {
		t.Errorf("backends %v", got)
	}
}
