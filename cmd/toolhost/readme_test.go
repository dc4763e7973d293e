package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// mdBlock is one fenced code block of a Markdown file, with the heading it
// stands under.
type mdBlock struct {
	heading, lang, text string
}

func mdBlocks(t *testing.T, path string) []mdBlock {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []mdBlock
	var cur *mdBlock
	heading := ""
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &mdBlock{heading: heading, lang: strings.TrimPrefix(line, "```")}
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		case strings.HasPrefix(line, "#"):
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
	}
	return out
}

// block returns the n-th (from 0) block of lang under heading.
func block(t *testing.T, blocks []mdBlock, heading, lang string, n int) string {
	t.Helper()
	for _, b := range blocks {
		if b.heading == heading && b.lang == lang {
			if n == 0 {
				return b.text
			}
			n--
		}
	}
	t.Fatalf("no %s block %d under %q", lang, n, heading)
	return ""
}

// TestPDKReadmeQuickstart follows pdk/README.md as a plugin author would: it
// runs its commands to start a module (require + replace on a checkout),
// writes its plugin and its pdktest test, runs the test, builds the .wasm
// with its build command, and loads the result in toolhost.
func TestPDKReadmeQuickstart(t *testing.T) {
	root := testutil.Root()
	blocks := mdBlocks(t, filepath.Join(root, "pdk", "README.md"))
	work := t.TempDir()
	// The README's checkout is ../toolhost, next to the plugin's folder.
	if err := os.Symlink(root, filepath.Join(work, "toolhost")); err != nil {
		t.Fatal(err)
	}
	sh := func(dir, script string) {
		t.Helper()
		cmd := exec.Command("sh", "-ec", script)
		cmd.Dir = dir
		// Offline: the pdk has no dependencies to download.
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOWORK=off", "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s\n%v\n%s", script, err, out)
		}
	}
	sh(work, block(t, blocks, "Start a plugin module", "sh", 0))
	dir := filepath.Join(work, "greet")
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	// The README's go.mod, but for the go line, which is the local Go's.
	dropGo := func(s string) string {
		var keep []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			if !strings.HasPrefix(l, "go ") && strings.TrimSpace(l) != "" {
				keep = append(keep, strings.TrimSpace(l))
			}
		}
		return strings.Join(keep, "\n")
	}
	if want := block(t, blocks, "Start a plugin module", "", 0); dropGo(string(gomod)) != dropGo(want) {
		t.Errorf("go.mod after the README's commands:\n%s\nthe README shows:\n%s", gomod, want)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.go", block(t, blocks, "Write a plugin", "go", 0))
	write("main_test.go", "package main\n\nimport (\n\t\"testing\"\n\n\t\"github.com/toolhost/toolhost/pdk/pdktest\"\n)\n\n"+block(t, blocks, "Test", "go", 0))
	sh(dir, "go test ./...")
	sh(dir, block(t, blocks, "Build", "sh", 0))

	wasm := filepath.Join(dir, "greet.wasm")
	code, stdout, stderr := runCLI("inspect", wasm)
	if code != 0 || !strings.Contains(stdout, "greet — Greets someone by name.") {
		t.Fatalf("inspect: exit %d\n%s\n%s", code, stdout, stderr)
	}
	cfg := writeConfig(t, "[plugins.greet]\npath = \""+wasm+"\"\n")
	code, stdout, stderr = runCLI("--config", cfg, "call", "greet__greet", "--args", `{"name":"Ada"}`)
	if code != 0 || stdout != "hello Ada\n" {
		t.Errorf("call: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	// What the README says the host does with arguments that do not
	// conform, and what pdktest does: the same text.
	code, stdout, _ = runCLI("--config", cfg, "call", "greet__greet", "--args", `{"name":7}`)
	if code != 1 || stdout != "invalid arguments for greet__greet: name: got number, want string\n" {
		t.Errorf("invalid call: exit %d, stdout %q", code, stdout)
	}
}

// TestEmbeddingReadme follows the README's Embedding section as an embedder
// would: its commands add the dependency (offline, from the module cache),
// its program is built as is and run on a configuration with the fs plugin
// and a review profile.
func TestEmbeddingReadme(t *testing.T) {
	root := testutil.Root()
	blocks := mdBlocks(t, filepath.Join(root, "README.md"))
	dir, sh := readmeModule(t, root, "agent", block(t, blocks, "Embedding", "go", 0), func(sh func(string) string) {
		// The README's commands, but go mod tidy, which wants the go.mod of
		// every module in the dependency graph (some are not in the module
		// cache: it would download them); readmeModule does its offline
		// equivalent.
		script := block(t, blocks, "Embedding", "sh", 0)
		if !strings.Contains(script, "\ngo mod tidy\n") {
			t.Fatalf("the README's commands changed:\n%s", script)
		}
		sh("go mod init example.com/agent")
		sh(strings.Replace(script, "\ngo mod tidy\n", "\n", 1))
	})
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	fs := wasmbuild.Build(t, filepath.Join(root, "plugins"), "./fs")
	write("toolhost.toml", `[plugins.fs]
path = "`+fs+`"
allowed_paths = { "/docs" = "ro:`+filepath.Join(root, "docs")+`" }

[profiles.review]
allow = ["fs__read_*", "fs__list_*"]
`)
	out := sh("./agent")
	for _, want := range []string{"fs__list_directory: ", "RATIONALE.md", "refused by profiles.review.allow (no glob matches)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the README's program printed no %q:\n%s", want, out)
		}
	}
}

// TestCLIReadmeCommands runs the README's CLI forms no other test or make
// run does: the configuration from $TOOLHOST_CONFIG and from
// ./toolhost.toml, --log-level info showing a server's stderr, and
// status --watch until SIGTERM (a real process).
func TestCLIReadmeCommands(t *testing.T) {
	cfg := writeConfig(t, "[servers.fixture]\ncommand = \"@FIXTURE@\"\n")

	t.Setenv("TOOLHOST_CONFIG", cfg)
	if code, stdout, stderr := runCLI("tools"); code != 0 || !strings.Contains(stdout, "fixture__echo") {
		t.Errorf("$TOOLHOST_CONFIG: exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Setenv("TOOLHOST_CONFIG", "")
	t.Chdir(filepath.Dir(cfg))
	if code, stdout, stderr := runCLI("tools"); code != 0 || !strings.Contains(stdout, "fixture__echo") {
		t.Errorf("./toolhost.toml: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI("--log-level", "info", "tools"); code != 0 || !strings.Contains(stderr, `[INFO]  toolhost.fixture: stderr: line="mcpfixture: starting`) {
		t.Errorf("--log-level info: exit %d, stderr lacks the server's stderr line:\n%s", code, stderr)
	}

	bin := testutil.GoBinary(t, "./cmd/toolhost")
	cmd := exec.Command(bin, "--config", cfg, "status", "--watch", "50ms")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Two tables, then SIGTERM: a clean exit 0.
	buf := make([]byte, 0, 4096)
	chunk := make([]byte, 4096)
	for strings.Count(string(buf), "BACKEND ") < 2 {
		n, err := stdout.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if err != nil {
			t.Fatalf("status --watch ended early: %v\n%s\n%s", err, buf, stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Errorf("status --watch after SIGTERM: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(string(buf), "fixture  stdio") {
		t.Errorf("status --watch:\n%s", buf)
	}
}

// readmeModule makes a program of the README as an embedder would, offline:
// a new module NAME beside a link to toolhost (root) with src as its
// main.go and toolhost's go.sum (so that nothing needs the checksum
// database); init runs the commands that create its go.mod and require
// toolhost (the README's, or go mod init with a replace); then the module
// requires what toolhost requires at toolhost's go version (go mod tidy's
// offline equivalent: tidy wants the go.mod of every module in the graph,
// and some are not in the module cache) and is built as dir/NAME. sh runs a
// shell script in dir, offline, and fails the test on an error.
func readmeModule(t *testing.T, root, name, src string, init func(sh func(string) string)) (dir string, sh func(string) string) {
	t.Helper()
	work := t.TempDir()
	if err := os.Symlink(root, filepath.Join(work, "toolhost")); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(work, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for file, text := range map[string]string{"go.sum": string(sums), "main.go": src} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh = func(script string) string {
		t.Helper()
		cmd := exec.Command("sh", "-ec", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOWORK=off", "GOFLAGS=", "GOSUMDB=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s\n%v\n%s", script, err, out)
		}
		return string(out)
	}
	init(sh)
	gomod := sh("go mod edit -json " + filepath.Join(root, "go.mod"))
	var mod struct {
		Go      string
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal([]byte(gomod), &mod); err != nil {
		t.Fatal(err)
	}
	edit := "go mod edit -go=" + mod.Go
	for _, r := range mod.Require {
		edit += " -require=" + r.Path + "@" + r.Version
	}
	sh(edit)
	sh("go build -o " + name + " .")
	return dir, sh
}
