package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/testutil"
)

// importVarRE finds the variables toolhost import asks to set on stderr.
var importVarRE = regexp.MustCompile(`(?m)^  set ([A-Za-z_][A-Za-z0-9_]*) \(`)

// parseImported loads import's stdout with config.Parse, every variable
// listed on stderr set to "VAL-" + its name, and fails on an unlisted one.
func parseImported(t *testing.T, stdout, stderr string) (*config.Config, map[string]string) {
	t.Helper()
	vars := map[string]string{}
	for _, m := range importVarRE.FindAllStringSubmatch(stderr, -1) {
		vars[m[1]] = "VAL-" + m[1]
	}
	vars["HOME"] = "/home/test"
	lookup := func(name string) (string, bool) {
		v, ok := vars[name]
		if ok && strings.HasSuffix(name, "_URL") {
			v = "https://val.example/" + name
		}
		return v, ok
	}
	cfg, err := config.Parse([]byte(stdout), &config.Options{Name: "imported.toml", Dir: t.TempDir(), LookupEnv: lookup})
	if err != nil {
		t.Fatalf("the output is not a valid configuration with the listed variables set: %v\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	return cfg, vars
}

func fixturePath(name string) string {
	return filepath.Join(testutil.Root(), "testdata", "import", name)
}

func TestImportClaudeDesktop(t *testing.T) {
	code, stdout, stderr := runCLI("import", fixturePath("claude_desktop_config.json"))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "# Format: Claude Desktop / Cursor / Claude Code .mcp.json (mcpServers)") {
		t.Errorf("format not named:\n%s", stdout)
	}
	for _, secret := range []string{"ghp_example", "BSA-example-key", "lin_api_example"} {
		if strings.Contains(stdout, secret) || strings.Contains(stderr, secret) {
			t.Errorf("the literal secret %q was written out:\n%s\n%s", secret, stdout, stderr)
		}
	}
	cfg, _ := parseImported(t, stdout, stderr)
	if got := cfg.ServerNames(); !slices.Equal(got, []string{"brave_search", "filesystem", "github", "linear"}) {
		t.Errorf("servers %v", got)
	}
	if !strings.Contains(stdout, "[servers.brave_search]\n# was \"Brave Search\" in the imported file\n") {
		t.Errorf("renamed server lacks its original name:\n%s", stdout)
	}
	gh := cfg.Servers["github"]
	if gh.Command != "npx" || !slices.Equal(gh.Args, []string{"-y", "@modelcontextprotocol/server-github"}) ||
		gh.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "VAL-GITHUB_PERSONAL_ACCESS_TOKEN" {
		t.Errorf("github: %+v", gh)
	}
	lin := cfg.Servers["linear"]
	if lin.URL != "https://mcp.linear.app/mcp" || lin.Headers["Authorization"] != "Bearer VAL-LINEAR_AUTHORIZATION" || lin.Headers["X-Client"] != "desktop" {
		t.Errorf("linear: %+v", lin)
	}
	for _, want := range []string{
		`set GITHUB_PERSONAL_ACCESS_TOKEN (was a literal in `,
		`set LINEAR_AUTHORIZATION (was a literal in `,
		`refused "legacy-sse": type "sse"`, `toolhost speaks Streamable HTTP`,
		`refused "broken": has neither command nor url`,
		`refused "price$": args element 4 is not a string (8080)`,
		`4 server(s) written, 3 refused`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestImportClaudeCodeMCPJSON(t *testing.T) {
	code, stdout, stderr := runCLI("import", fixturePath("mcp.json"))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	cfg, _ := parseImported(t, stdout, stderr)
	pg := cfg.Servers["postgres"]
	if !slices.Equal(pg.Args, []string{"-y", "@modelcontextprotocol/server-postgres", "https://val.example/DATABASE_URL"}) ||
		pg.Env["PGPASSWORD"] != "VAL-PGPASSWORD" || pg.Env["PGAPPNAME"] != "VAL-PGAPPNAME" || pg.Cwd != "/srv/app" {
		t.Errorf("postgres: %+v", pg)
	}
	// ${VAR:-default} is toolhost's syntax too: kept.
	if !strings.Contains(stdout, `url = "${SENTRY_URL:-https://mcp.sentry.dev/mcp}"`) || cfg.Servers["sentry"].Headers["Authorization"] != "Bearer VAL-SENTRY_TOKEN" {
		t.Errorf("sentry:\n%s", stdout)
	}
	for _, v := range []string{"DATABASE_URL", "PGPASSWORD", "SENTRY_TOKEN", "SENTRY_URL", "PGAPPNAME"} {
		if !strings.Contains(stderr, "set "+v+" (") {
			t.Errorf("stderr does not list %s:\n%s", v, stderr)
		}
	}
}

func TestImportClaudeJSONProjects(t *testing.T) {
	code, stdout, stderr := runCLI("import", fixturePath("claude.json"))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "# Format: Claude Code ~/.claude.json") {
		t.Errorf("format not named:\n%s", stdout)
	}
	cfg, _ := parseImported(t, stdout, stderr)
	if got := cfg.ServerNames(); !slices.Equal(got, []string{"git", "memory", "notion"}) {
		t.Errorf("servers %v", got)
	}
	// The top-level memory comes first; the project's is refused, not merged.
	if !slices.Equal(cfg.Servers["memory"].Args, []string{"-y", "@modelcontextprotocol/server-memory"}) {
		t.Errorf("memory: %+v", cfg.Servers["memory"])
	}
	if !strings.Contains(stderr, `refused "memory (project /home/alice/api)": backend name "memory" is already taken`) {
		t.Errorf("collision not refused with its reason:\n%s", stderr)
	}
	if !strings.Contains(stdout, "[servers.git]\n# from project /home/alice/api\n") {
		t.Errorf("project not named:\n%s", stdout)
	}
}

func TestImportVSCode(t *testing.T) {
	code, stdout, stderr := runCLI("import", fixturePath("vscode_mcp.json"))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "# Format: VS Code .vscode/mcp.json") {
		t.Errorf("format not named:\n%s", stdout)
	}
	cfg, _ := parseImported(t, stdout, stderr)
	if cfg.Servers["github"].Headers["Authorization"] != "Bearer VAL-GITHUB_TOKEN" {
		t.Errorf("github: %+v", cfg.Servers["github"])
	}
	p := cfg.Servers["perplexity"]
	if p.Env["PERPLEXITY_API_KEY"] != "VAL-PERPLEXITY_KEY" || p.Env["HOME_DIR"] != "/home/test" {
		t.Errorf("perplexity: %+v", p)
	}
	f := cfg.Servers["fetch"]
	if f.Env["PROXY"] != "VAL-HTTPS_PROXY" || f.Cwd != "VAL-WORKSPACE_FOLDER" && !strings.HasSuffix(f.Cwd, "/VAL-WORKSPACE_FOLDER") {
		t.Errorf("fetch: %+v", f)
	}
	for _, want := range []string{
		`set GITHUB_TOKEN (VS Code input "github-token", used in header Authorization of "github": GitHub Personal Access Token (a password))`,
		`set PERPLEXITY_KEY (VS Code input "perplexityKey"`,
		`refused "with-env-file": envFile is not supported`,
		`refused "old": type "sse"`,
		`refused "pathsep": args element 1 uses the VS Code variable ${pathSeparator}`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// writeJSON writes v as JSON to a temporary file and returns its path.
func writeJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, data)
}

func writeFile(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "client.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// terminalUnsafe reports raw terminal controls: C0 but newline, DEL, C1 and
// the bidirectional overrides.
func terminalUnsafe(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x202e || r == 0x2066
	})
}

// Names and values with quotes, newlines, "]]", backslashes, "$", terminal
// escapes and bidi controls come out as TOML that decodes to the same
// strings, and no raw control reaches the terminal.
func TestImportHostileRoundTrip(t *testing.T) {
	hostile := "a\"b\\c\n]]\r\t$x ${ '''\"\"\" \x1b[2J\x1b]0;title\x07 \u202eevil \u0085 \x7f end"
	path := writeJSON(t, map[string]any{"mcpServers": map[string]any{
		"evil\x1b[31m name\n[servers.x]": map[string]any{
			"command": "/bin/" + hostile,
			"args":    []string{hostile, "]]", "\"\"\"", "$$", "${NOT_A_REF"},
			"env":     map[string]any{"API_TOKEN": hostile},
			"cwd":     "/tmp/" + hostile,
		},
		"remote\u202e": map[string]any{
			"url":     "https://example.com/mcp?q=\"]]'$x${",
			"headers": map[string]any{"X-Note": "]] \"quoted\" \u202e $HOME", "X-Api-Key": "k\u202e"},
		},
	}})
	code, stdout, stderr := runCLI("import", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if terminalUnsafe(stdout) || terminalUnsafe(stderr) {
		t.Errorf("raw control characters in the output:\n%q\n%q", stdout, stderr)
	}
	cfg, _ := parseImported(t, stdout, stderr)
	if len(cfg.Servers) != 2 {
		t.Fatalf("servers %v\n%s", cfg.ServerNames(), stdout)
	}
	var s *config.Server
	for _, n := range cfg.ServerNames() {
		if cfg.Servers[n].Command != "" {
			s = cfg.Servers[n]
		}
	}
	if s == nil || s.Command != "/bin/"+hostile || !slices.Equal(s.Args, []string{hostile, "]]", "\"\"\"", "$$", "${NOT_A_REF"}) || s.Cwd != "/tmp/"+hostile {
		t.Errorf("did not round-trip:\n%#v\n%s", s, stdout)
	}
	if s != nil && s.Env["API_TOKEN"] != "VAL-API_TOKEN" {
		t.Errorf("env: %v", s.Env)
	}
	r := cfg.Servers["remote_"]
	if r == nil || r.URL != "https://example.com/mcp?q=\"]]'$x${" || r.Headers["X-Note"] != "]] \"quoted\" \u202e $HOME" || r.Headers["X-Api-Key"] != "VAL-REMOTE_X_API_KEY" {
		t.Errorf("remote: %+v\n%s", r, stdout)
	}
	if !strings.Contains(stdout, `# was "evil\x1b[31m name\n[servers.x]" in the imported file`) {
		t.Errorf("original name not shown escaped:\n%s", stdout)
	}
}

func TestImportHeaderControlCharsRefused(t *testing.T) {
	path := writeJSON(t, map[string]any{"mcpServers": map[string]any{
		"a": map[string]any{"url": "https://example.com/mcp", "headers": map[string]any{"X-Api-Key": "k\r\nX-Injected: 1"}},
		"b": map[string]any{"url": "https://example.com/mcp", "headers": map[string]any{"Bad Name": "v"}},
		"c": map[string]any{"url": "ftp://example.com/"},
		"d": map[string]any{"command": "x", "env": map[string]any{"1BAD": "v"}},
		"e": map[string]any{"command": "x\x00y"},
		"f": map[string]any{"command": "x", "url": "https://example.com/"},
		"g": map[string]any{"type": "websocket", "url": "wss://example.com/"},
		"h": map[string]any{"command": "x", "env": map[string]any{"N": 1}},
		"i": "not an object",
	}})
	code, stdout, stderr := runCLI("import", path)
	if code != 1 || stdout != "" {
		t.Fatalf("exit %d (want 1: nothing written), stdout:\n%s", code, stdout)
	}
	for _, want := range []string{
		`refused "a": header "X-Api-Key" has line breaks or other control characters`,
		`refused "b": header "Bad Name" is not a valid HTTP header name`,
		`refused "c": url is not an http or https URL with a host`,
		`refused "d": env "1BAD" is not a valid environment variable name`,
		`refused "e": command contains a NUL character`,
		`refused "f": has both command and url`,
		`refused "g": unknown type "websocket"`,
		`refused "h": env "N" is not a string`,
		`refused "i": the entry is not a JSON object`,
		`0 server(s) written, 9 refused`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestImportNames(t *testing.T) {
	long := strings.Repeat("Ab-", 100)
	path := writeJSON(t, map[string]any{"mcpServers": map[string]any{
		"My Server":  map[string]any{"command": "a"},
		"my_server":  map[string]any{"command": "b"}, // collides once "My Server" is renamed
		"x__y":       map[string]any{"command": "c"},
		long:         map[string]any{"command": "d"},
		"\x1b[2J":    map[string]any{"command": "e"},
		"ok-name_1":  map[string]any{"command": "f"},
		"Ünïcödé":    map[string]any{"command": "g"},
		"dup_after_": map[string]any{"command": "h"},
	}})
	code, stdout, stderr := runCLI("import", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	cfg, _ := parseImported(t, stdout, stderr)
	for _, want := range []string{"my_server", "x_y", "ok-name_1", "dup_after_"} {
		if cfg.Servers[want] == nil {
			t.Errorf("no server %q: %v", want, cfg.ServerNames())
		}
	}
	if cfg.Servers["my_server"] != nil && cfg.Servers["my_server"].Command != "a" {
		t.Errorf("my_server is %q, want the first entry (My Server)", cfg.Servers["my_server"].Command)
	}
	if !strings.Contains(stderr, `refused "my_server": backend name "my_server" is already taken by the entry "My Server"`) {
		t.Errorf("duplicate not refused:\n%s", stderr)
	}
	for _, n := range cfg.ServerNames() {
		if len(n) > 64 {
			t.Errorf("name %q longer than 64", n)
		}
	}
	if terminalUnsafe(stderr) || terminalUnsafe(stdout) {
		t.Errorf("raw controls:\n%q\n%q", stdout, stderr)
	}
}

func TestImportBadFiles(t *testing.T) {
	tooMany := map[string]any{}
	for i := range maxImportServers + 1 {
		tooMany[fmt.Sprintf("s%d", i)] = map[string]any{"command": "x"}
	}
	deep := `{"mcpServers": {"a": {"command": "x", "args": ` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}}`
	cases := []struct {
		name, data, want string
	}{
		{"syntax", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}", "invalid JSON at line 3, column 27"},
		{"not an object", `["mcpServers"]`, "invalid JSON at line 1"},
		{"null", `null`, "the JSON is null"},
		{"unknown shape", `{"servers2": {}}`, "not a known client configuration"},
		{"mcpServers not an object", `{"mcpServers": []}`, "mcpServers is not a JSON object"},
		{"inputs not an array", `{"servers": {}, "inputs": {}}`, "inputs is not an array"},
		{"project not an object", `{"projects": {"/p": 3}}`, `projects["/p"] is not a JSON object`},
		{"too many", string(must(json.Marshal(map[string]any{"mcpServers": tooMany}))), "1001 server entries, more than the 1000"},
		{"deep nesting", deep, "invalid JSON"},
		{"too large", `{"mcpServers": {"a": {"command": "` + strings.Repeat("x", maxImportFile) + `"}}}`, "larger than 4 MiB"},
		{"terminal escapes", "{\"mcpServers\": \x1b[2J}", `invalid character '\x1b'`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, []byte(tc.data))
			code, stdout, stderr := runCLI("import", path)
			if code != 2 || stdout != "" {
				t.Fatalf("exit %d (want 2), stdout %q", code, stdout)
			}
			if !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, path) {
				t.Errorf("stderr lacks %q or the file name:\n%s", tc.want, stderr)
			}
			if terminalUnsafe(stderr) {
				t.Errorf("raw controls in %q", stderr)
			}
		})
	}
	code, _, stderr := runCLI("import", filepath.Join(t.TempDir(), "missing.json"))
	if code != 2 || !strings.Contains(stderr, "missing.json: no such file") {
		t.Errorf("missing file: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := runCLI("import"); code != 2 || !strings.Contains(stderr, "import takes one FILE") {
		t.Errorf("no FILE: exit %d\n%s", code, stderr)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A big value is imported whole; messages about it are bounded.
func TestImportHugeStrings(t *testing.T) {
	big := strings.Repeat("y", 3<<20)
	path := writeJSON(t, map[string]any{"mcpServers": map[string]any{
		"big":                         map[string]any{"command": "x", "args": []string{big}},
		strings.Repeat("\x1b", 1<<16): map[string]any{"command": "x", "args": []any{big[:1<<16] + "\x1b", 1}},
	}})
	code, stdout, stderr := runCLI("import", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	cfg, _ := parseImported(t, stdout, stderr)
	if len(cfg.Servers["big"].Args[0]) != len(big) {
		t.Errorf("big arg cut")
	}
	if len(stderr) > 4096 {
		t.Errorf("stderr is %d bytes: a refusal should not echo a huge name whole", len(stderr))
	}
}

func TestImportPrefixCheck(t *testing.T) {
	cfgPath := writeConfig(t, `
[servers.github]
command = "@FIXTURE@"

[servers.other]
command = "@FIXTURE@"
prefix = "memory__"
`)
	path := writeJSON(t, map[string]any{"mcpServers": map[string]any{
		"github": map[string]any{"command": "x"},
		"memory": map[string]any{"command": "y"},
		"fresh":  map[string]any{"command": "z"},
	}})
	code, stdout, stderr := runCLI("--config", cfgPath, "import", path, "--prefix-check")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "[servers.fresh]") || strings.Contains(stdout, "[servers.github]") || strings.Contains(stdout, "[servers.memory]") {
		t.Errorf("stdout:\n%s", stdout)
	}
	for _, want := range []string{
		`refused "github": backend name "github" is already used in the configuration`,
		`refused "memory": tool prefix "memory__" is already the prefix of backend "other"`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// Without the flag, the configuration is not read.
	if code, stdout, _ := runCLI("--config", cfgPath, "import", path); code != 0 || !strings.Contains(stdout, "[servers.github]") {
		t.Errorf("without --prefix-check: exit %d\n%s", code, stdout)
	}
}

// End to end through the built binary: import a Claude Desktop file whose
// server is the fixture MCP server with a literal secret, load the output as
// the configuration and call a tool; without the listed variable set, the
// configuration names it.
func TestImportBinaryEndToEnd(t *testing.T) {
	bin := testutil.GoBinary(t, "./cmd/toolhost")
	dir := t.TempDir()
	src := filepath.Join(dir, "claude_desktop_config.json")
	data := must(json.Marshal(map[string]any{"mcpServers": map[string]any{
		"Fixture Server": map[string]any{"command": testutil.Fixture(t), "env": map[string]any{"FIXTURE_API_KEY": "sk-literal-secret"}},
		"old":            map[string]any{"type": "sse", "url": "http://127.0.0.1:1/sse"},
	}}))
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "import", src)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("import: %v\n%s", err, stderr.String())
	}
	if strings.Contains(string(out), "sk-literal-secret") {
		t.Fatalf("secret in the TOML:\n%s", out)
	}
	if !strings.Contains(stderr.String(), "set FIXTURE_API_KEY (was a literal in "+src) || !strings.Contains(stderr.String(), `refused "old"`) {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	toml := filepath.Join(dir, "toolhost.toml")
	if err := os.WriteFile(toml, out, 0o600); err != nil {
		t.Fatal(err)
	}
	env := slices.DeleteFunc(os.Environ(), func(s string) bool { return strings.HasPrefix(s, "FIXTURE_API_KEY=") })
	call := exec.Command(bin, "--config", toml, "call", "fixture_server__echo", "--args", `{"text":"imported"}`)
	call.Env = append(env, "FIXTURE_API_KEY=set-by-user")
	got, err := call.CombinedOutput()
	if err != nil || !strings.Contains(string(got), "imported") {
		t.Fatalf("call through the imported configuration: %v\n%s\n%s", err, got, out)
	}
	check := exec.Command(bin, "--config", toml, "check")
	check.Env = env
	got, err = check.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(got), "FIXTURE_API_KEY") {
		t.Errorf("check without the variable: %v\n%s", err, got)
	}
}

// VS Code's settings.json keeps servers under "mcp"; keys toolhost has no
// use for are named in a comment, not dropped silently.
func TestImportVSCodeSettingsAndIgnoredKeys(t *testing.T) {
	path := writeJSON(t, map[string]any{
		"editor.fontSize": 14,
		"mcp": map[string]any{
			"inputs": []any{map[string]any{"type": "promptString", "id": "api_key", "description": "Key\x1b[2J", "password": true}},
			"servers": map[string]any{
				"time": map[string]any{"command": "uvx", "args": []string{"mcp-server-time"}, "env": map[string]any{"KEY": "${input:api_key}"},
					"disabled": true, "alwaysAllow": []string{"get_time"}},
			},
		},
	})
	code, stdout, stderr := runCLI("import", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	cfg, _ := parseImported(t, stdout, stderr)
	if cfg.Servers["time"].Env["KEY"] != "VAL-API_KEY" {
		t.Errorf("time: %+v", cfg.Servers["time"])
	}
	for _, want := range []string{"# Format: VS Code settings.json", "# not imported: alwaysAllow, disabled"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, `set API_KEY (VS Code input "api_key", used in env KEY of "time": Key\x1b[2J (a password))`) {
		t.Errorf("stderr:\n%q", stderr)
	}
}

// A refused entry's variables are not listed to set.
func TestImportRefusedEntryListsNoVariables(t *testing.T) {
	path := writeJSON(t, map[string]any{"mcpServers": map[string]any{
		"a": map[string]any{"url": "https://example.com/mcp", "headers": map[string]any{"Authorization": "Bearer x", "Bad Name": "v"}},
		"b": map[string]any{"command": "x", "env": map[string]any{"B_KEY": "v"}},
	}})
	code, _, stderr := runCLI("import", path)
	if code != 0 || strings.Contains(stderr, "A_AUTHORIZATION") || !strings.Contains(stderr, "set B_KEY (") || !strings.Contains(stderr, `refused "a"`) {
		t.Errorf("exit %d\n%s", code, stderr)
	}
}

// Two entries with the same env key but different literals share the
// variable: stderr says so.
func TestImportSharedVariableNote(t *testing.T) {
	path := writeJSON(t, map[string]any{"mcpServers": map[string]any{
		"a": map[string]any{"command": "x", "env": map[string]any{"API_KEY": "one"}},
		"b": map[string]any{"command": "x", "env": map[string]any{"API_KEY": "two"}},
		"c": map[string]any{"command": "x", "env": map[string]any{"SAME": "v"}},
		"d": map[string]any{"command": "x", "env": map[string]any{"SAME": "v"}},
	}})
	code, _, stderr := runCLI("import", path)
	if code != 0 || !strings.Contains(stderr, `note: API_KEY was a literal with different values in several entries`) || strings.Contains(stderr, "note: SAME") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
}
