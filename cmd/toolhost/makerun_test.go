package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// makeRunConfig returns the repository's toolhost.toml (what `make run`
// runs) written to a temporary directory, its relative paths made absolute
// (the fixture server and the plugins built by the tests, the fs plugin's
// mount on the repository's docs/) and its audit log moved there, so that
// the test neither needs `make` nor writes into bin/. Every relocation must
// match once: a change of toolhost.toml that this misses fails the test
// rather than testing something else.
func makeRunConfig(t *testing.T) (cfg, auditLog string) {
	t.Helper()
	root := testutil.Root()
	src, err := os.ReadFile(filepath.Join(root, "toolhost.toml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	auditLog = filepath.Join(dir, "audit.jsonl")
	plugins := filepath.Join(root, "plugins")
	text := string(src)
	for _, r := range [][2]string{
		{`"bin/audit.jsonl"`, `"` + auditLog + `"`},
		{`"bin/logs"`, `"` + filepath.Join(dir, "logs") + `"`},
		{`"bin/mcpfixture"`, `"` + testutil.Fixture(t) + `"`},
		{`"plugins/jq.wasm"`, `"` + wasmbuild.Build(t, plugins, "./jq") + `"`},
		{`"plugins/time.wasm"`, `"` + wasmbuild.Build(t, plugins, "./time") + `"`},
		{`"plugins/fs.wasm"`, `"` + wasmbuild.Build(t, plugins, "./fs") + `"`},
		{`"plugins/fetch.wasm"`, `"` + wasmbuild.Build(t, plugins, "./fetch") + `"`},
		{`"ro:./docs"`, `"ro:` + filepath.Join(root, "docs") + `"`},
	} {
		if n := strings.Count(text, r[0]); n != 1 {
			t.Fatalf("toolhost.toml has %s %d times, want once: update makeRunConfig", r[0], n)
		}
		text = strings.Replace(text, r[0], r[1], 1)
	}
	cfg = filepath.Join(dir, "toolhost.toml")
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, auditLog
}

// warningRE matches what a user would read as a warning or an error that
// is not the command's own answer: a log line at WARN or ERROR level, a
// "warning:" of the CLI, and a nil error printed as if it were one.
var warningRE = regexp.MustCompile(`\[WARN\]|\[ERROR\]|(?i)\bwarning:|<nil>`)

// TestMakeRunHasNoWarnings runs the commands of `make run` on its own
// configuration (toolhost.toml) and checks that none prints a warning: a
// call starts only the backends it needs, and a check of the whole
// catalogue ([tools.NAME] names a tool no backend lists; a profile's
// recommended backend is not ready) must not run against the part of it
// that was started (issue 20, item 2).
func TestMakeRunHasNoWarnings(t *testing.T) {
	testutil.NeedNpx(t)
	t.Setenv("npm_config_cache", npmCache(t))
	cfg, _ := makeRunConfig(t)
	// Compile the plugins first, without a deadline, as `make run` finds
	// them compiled after its first run: a cold compile of four plugins
	// under -race on a loaded machine can outlast their startup_timeout,
	// and that failure (a true warning) is not what this test is about.
	if code, stdout, stderr := runCLI("--config", cfg, "prewarm"); code != exitOK {
		t.Fatalf("prewarm: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"check"}, exitOK},
		{[]string{"tools"}, exitOK},
		{[]string{"call", "everything__echo", "--args", `{"message":"hello from toolhost"}`}, exitOK},
		{[]string{"call", "everything__get-sum", "--args", `{"a":19,"b":23}`}, exitOK},
		{[]string{"call", "fixture__add", "--args", `{"a":2,"b":40}`}, exitOK},
		{[]string{"call", "jq__jq", "--args", `{"filter":".[0].name","input":[{"name":"wazero"}]}`}, exitOK},
		{[]string{"call", "fs__list_directory", "--args", `{"path":"/docs"}`}, exitOK},
		{[]string{"call", "fs__read_file", "--args", `{"path":"/etc/passwd"}`}, exitToolError},
		{[]string{"call", "fetch__fetch", "--args", `{"url":"http://169.254.169.254/latest/meta-data/"}`}, exitCallError},
		{[]string{"call", "fixture__nope"}, exitCallError},
		{[]string{"check", "--profile", "review"}, exitOK},
		{[]string{"call", "--profile", "review", "fs__read_file", "--args", `{"path":"/docs/RATIONALE.md"}`}, exitOK},
		{[]string{"call", "--profile", "review", "fs__write_file", "--args", `{"path":"/docs/x","content":"x"}`}, exitDenied},
		{[]string{"status"}, exitOK},
	} {
		t.Run(strings.Join(c.args[:min(len(c.args), 4)], " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(append([]string{"--config", cfg}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, stdout, stderr)
			}
			for _, l := range strings.Split(stderr, "\n") {
				if warningRE.MatchString(l) {
					t.Errorf("stderr has a warning: %s", l)
				}
			}
			if c.args[0] == "check" {
				for _, l := range strings.Split(stdout, "\n") {
					if warningRE.MatchString(l) {
						t.Errorf("stdout has a warning: %s", l)
					}
				}
			}
		})
	}
}

// npmCache is the npm cache make run uses ($npm_config_cache, else
// ~/.npm), so that npx finds server-everything there.
func npmCache(t *testing.T) string {
	if c := os.Getenv("npm_config_cache"); c != "" {
		return c
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory for the npm cache")
	}
	return filepath.Join(home, ".npm")
}
