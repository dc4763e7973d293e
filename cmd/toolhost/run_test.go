package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/pgtest"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

func TestMain(m *testing.M) {
	// testutil.Main points $XDG_STATE_HOME, where toolhost serve opens its
	// store by default (issue 25), at a directory of the test binary's own.
	code := testutil.Main(m)
	pgtest.Stop() // the store tests' PostgreSQL
	os.Exit(code)
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolhost.toml")
	body = strings.ReplaceAll(body, "@FIXTURE@", testutil.Fixture(t))
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

const fixtureConfig = `
[servers.fixture]
command = "@FIXTURE@"
deny_tools = ["crash"]

[servers.broken]
command = "toolhost-no-such-program"
max_restarts = 0

[policy]
deny = ["fixture__sleep", "fixture__big*"]
allow = ["fixture__big"]
default = "allow"

[profiles.review]
allow = ["fixture__echo", "fixture__add"]
deny = ["fixture__add"]

[profiles.needs]
requires = ["broken"]
`

func TestCLI(t *testing.T) {
	cfg := writeConfig(t, fixtureConfig)
	// check looks commands up in PATH: for it, the broken backend is a
	// server that refuses connections.
	checkCfg := writeConfig(t, strings.Replace(fixtureConfig, `command = "toolhost-no-such-program"`, `url = "http://127.0.0.1:1/mcp"`, 1))
	cases := []struct {
		name     string
		args     []string
		code     int
		stdout   []string // substrings
		stderr   []string
		noStdout bool
	}{
		{"tools", []string{"--config", cfg, "tools"}, 0, []string{"NAME", "fixture__echo", "Echo the text back."}, []string{"broken: backend failed to start"}, false},
		{"call", []string{"--config", cfg, "call", "fixture__echo", "--args", `{"text":"hi there"}`}, 0, []string{"hi there"}, nil, false},
		{"call flags first", []string{"--config", cfg, "call", "--args", `{"a":1,"b":2}`, "fixture__add"}, 0, []string{`{"sum":3}`}, nil, false},
		{"call json", []string{"--config", cfg, "call", "fixture__add", "--json", "--args", `{"a":1,"b":2}`}, 0, []string{`"structuredContent"`}, nil, false},
		{"tool error", []string{"--config", cfg, "call", "fixture__fail"}, 1, []string{"failed as asked"}, []string{"returned an error result"}, false},
		{"unknown tool", []string{"--config", cfg, "call", "fixture__nope"}, 3, nil, []string{`unknown tool "fixture__nope"`}, true},
		{"unavailable", []string{"--config", cfg, "call", "broken__x"}, 3, nil, []string{`backend unavailable: backend "broken" is failed`, "not found in PATH"}, true},
		{"bad args", []string{"--config", cfg, "call", "fixture__echo", "--args", `{nope`}, 2, nil, []string{"--args is not valid JSON"}, true},
		{"status", []string{"--config", cfg, "status"}, 0, []string{"fixture", "ready", "broken", "failed", "not found in PATH"}, nil, false},
		{"check", []string{"--config", checkCfg, "check"}, 0, []string{"is valid", "fixture", "stdio", "fixture__", "profiles: needs, review",
			`note: policy.allow[0] "fixture__big" can never allow anything: policy.deny[1] "fixture__big*" denies all it matches`}, nil, false},
		{"tools profile", []string{"--config", cfg, "tools", "--profile", "review"}, 0, []string{"fixture__echo"}, nil, false},
		{"call profile", []string{"--config", cfg, "call", "--profile", "review", "fixture__echo", "--args", `{"text":"in review"}`}, 0, []string{"in review"}, nil, false},
		{"call denied", []string{"--config", cfg, "call", "--profile", "review", "fixture__add", "--args", `{"a":1,"b":2}`}, 4, nil, []string{`call denied`, `profiles.review.deny[0] "fixture__add"`}, true},
		{"call denied globally", []string{"--config", cfg, "call", "fixture__sleep"}, 4, nil, []string{`policy.deny[0] "fixture__sleep"`}, true},
		{"call invalid arguments", []string{"--config", cfg, "call", "--profile", "review", "fixture__echo", "--args", `{"text":3}`}, 1, []string{"invalid arguments for fixture__echo", "text"}, nil, false},
		{"unknown profile", []string{"--config", cfg, "tools", "--profile", "nope"}, 2, nil, []string{`unknown profile "nope"`}, true},
		{"check unknown profile", []string{"--config", cfg, "check", "--profile", "nope"}, 2, nil, []string{`no profile "nope"`}, true},
		{"check missing command", []string{"--config", cfg, "check"}, 2, nil, []string{"toolhost: invalid configuration:\n" + cfg + `:7: servers.broken.command: "toolhost-no-such-program" is not found in PATH: install it, or give its path` + "\n"}, true},
		{"check profile", []string{"--config", checkCfg, "check", "--profile", "review"}, 0, []string{"profile review", "fixture__echo", "allowed", `profiles.review.allow[0] "fixture__echo"`,
			"fixture__add", `profiles.review.deny[0] "fixture__add"`, "fixture__fail", "profiles.review.allow (no glob matches)", "(crash)", `servers.fixture.deny_tools[0] "crash"`}, nil, false},
		{"check profile requires", []string{"--config", checkCfg, "check", "--profile", "needs"}, 3, []string{"requires broken: NOT READY"}, nil, false},
		{"unknown command", []string{"--config", cfg, "frobnicate"}, 2, nil, []string{`unknown command "frobnicate"`}, true},
		{"no command", []string{}, 2, nil, []string{"Usage:"}, true},
		{"help", []string{"help"}, 0, []string{"Commands:"}, nil, false},
		{"missing config", []string{"--config", filepath.Join(t.TempDir(), "nope.toml"), "tools"}, 2, nil, []string{"nope.toml"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			if tc.noStdout && stdout != "" {
				t.Errorf("stdout should be empty, got %q", stdout)
			}
		})
	}
}

func TestCLIToolsJSON(t *testing.T) {
	cfg := writeConfig(t, fixtureConfig)
	// 3 of the fixture's 6 tools: fixtureConfig denies crash, sleep and big.
	code, stdout, _ := runCLI("--config", cfg, "tools", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var tools []struct {
		Name        string         `json:"name"`
		Backend     string         `json:"backend"`
		BackendTool string         `json:"backend_tool"`
		InputSchema map[string]any `json:"inputSchema"`
	}
	if err := json.Unmarshal([]byte(stdout), &tools); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if len(tools) != 3 || tools[0].Backend != "fixture" || tools[0].InputSchema["type"] != "object" {
		t.Fatalf("tools = %+v", tools)
	}
}

// TestCLICheckBrokenConfig: check names the key and its line.
func TestCLICheckBrokenConfig(t *testing.T) {
	cfg := writeConfig(t, `[host]
call_timeout = "30s"

[servers.fixture]
command = "@FIXTURE@"
comand = "typo"
`)
	code, stdout, stderr := runCLI("--config", cfg, "check")
	if code != 2 {
		t.Fatalf("exit %d, want 2; stdout %s", code, stdout)
	}
	if !strings.Contains(stderr, "toolhost.toml:6") || !strings.Contains(stderr, "servers.fixture.comand") {
		t.Fatalf("stderr should name line 6 and the key:\n%s", stderr)
	}
}

func TestCLIInspect(t *testing.T) {
	wasm := wasmbuild.Build(t, filepath.Join(testutil.Root(), "plugins"), "./jq")
	code, stdout, stderr := runCLI("inspect", wasm)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"abi:      v2", "jq — ", `"filter"`, "extism:host/env"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = runCLI("inspect", "--json", wasm)
	var r struct {
		ABI   string `json:"abi"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &r) != nil || r.ABI != "v2" || len(r.Tools) != 1 || r.Tools[0].Name != "jq" {
		t.Fatalf("inspect --json: exit %d, %+v\n%s", code, r, stdout)
	}
	if code, _, stderr := runCLI("inspect", filepath.Join(t.TempDir(), "missing.wasm")); code != 3 || !strings.Contains(stderr, "missing.wasm") {
		t.Errorf("inspect of a missing file: exit %d, %s", code, stderr)
	}
}

// TestCLIPluginsAndServers: one catalogue with a Wasm plugin next to an MCP
// server, and a call to each.
func TestCLIPluginsAndServers(t *testing.T) {
	wasm := wasmbuild.Build(t, filepath.Join(testutil.Root(), "plugins"), "./jq")
	cfg := writeConfig(t, `
[servers.fixture]
command = "@FIXTURE@"

[plugins.jq]
path = "`+wasm+`"
`)
	code, stdout, stderr := runCLI("--config", cfg, "tools")
	if code != 0 || !strings.Contains(stdout, "jq__jq") || !strings.Contains(stdout, "fixture__echo") {
		t.Fatalf("tools: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI("--config", cfg, "call", "jq__jq", "--args", `{"filter":".a+1","input":{"a":41}}`)
	if code != 0 || strings.TrimSpace(stdout) != "42" {
		t.Fatalf("jq call: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
}

// TestStatusChecksHealth: a one-shot toolhost status runs one health check
// of every ready backend before printing, so HEALTH is ok (not unknown) on a
// host that has only just started.
func TestStatusChecksHealth(t *testing.T) {
	cfg := writeConfig(t, fixtureConfig)
	code, out, errs := runCLI("--config", cfg, "status", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var st []host.BackendStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	for _, s := range st {
		want := map[string]string{"fixture": host.HealthOK, "broken": host.HealthUnknown}[s.Name]
		if s.Health != want {
			t.Errorf("%s: health %q, want %q", s.Name, s.Health, want)
		}
	}
}

// TestCLIToolsAllFailed: tools exits 3 when no backend is ready, instead of
// printing an empty table with status 0.
func TestCLIToolsAllFailed(t *testing.T) {
	cfg := writeConfig(t, `
[servers.a]
command = "toolhost-no-such-program"
max_restarts = 0

[plugins.b]
path = "missing.wasm"
`)
	code, stdout, stderr := runCLI("--config", cfg, "tools")
	if code != 3 || stdout != "" {
		t.Fatalf("exit %d, stdout %q; want 3 and nothing on stdout", code, stdout)
	}
	want := "toolhost: no tools: none of the 2 backends is ready (their errors are logged above); run 'toolhost status' for their state\n"
	if !strings.HasSuffix(stderr, want) {
		t.Errorf("stderr does not end with %q:\n%s", want, stderr)
	}
	// No backend at all is an empty catalogue, not a failure.
	cfg = writeConfig(t, "[host]\ncall_timeout = \"5s\"\n")
	if code, stdout, stderr := runCLI("--config", cfg, "tools"); code != 0 || stdout != "NAME  BACKEND  DESCRIPTION\n" {
		t.Errorf("no backends: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
}

// TestCLILogsOnce: a dropped tool is logged once per process, not once per
// catalogue rebuild, and a start failure is printed once, not also as a
// warning of the CLI's own.
func TestCLILogsOnce(t *testing.T) {
	cfg := writeConfig(t, `
[servers.fx]
command = "@FIXTURE@"
args = ["-extra"]

[servers.lazy1]
command = "@FIXTURE@"
start = "lazy"

[servers.lazy2]
command = "@FIXTURE@"
start = "lazy"

[servers.broken]
command = "toolhost-no-such-program"
max_restarts = 0
`)
	code, _, stderr := runCLI("--config", cfg, "tools")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(stderr, "tool dropped: its schema does not compile"); n != 1 {
		t.Errorf("the dropped tool is logged %d times, want once:\n%s", n, stderr)
	}
	if n := strings.Count(stderr, "toolhost-no-such-program"); n != 1 {
		t.Errorf("the start failure is printed %d times, want once:\n%s", n, stderr)
	}
	// With the host's logs off, the CLI says it itself, once.
	_, _, stderr = runCLI("--config", cfg, "--log-level", "off", "tools")
	if n := strings.Count(stderr, "toolhost-no-such-program"); n != 1 || !strings.Contains(stderr, "toolhost: warning: backend broken failed to start (failed)") {
		t.Errorf("--log-level off: the start failure is printed %d times, want once as a warning:\n%s", n, stderr)
	}
}

// TestCLICallArgs: --args @FILE and --args - (stdin) carry arguments too
// large for a command line; call --help works; arguments that are not a
// JSON object are a usage error (exit 2), as the help text says.
func TestCLICallArgs(t *testing.T) {
	cfg := writeConfig(t, fixtureConfig)
	// 1 MiB of text: far beyond the 128 KiB Linux accepts in one
	// command-line argument.
	big := strings.Repeat("x", 1<<20)
	file := filepath.Join(t.TempDir(), "args.json")
	if err := os.WriteFile(file, []byte(`{"text":"`+big+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("--config", cfg, "call", "fixture__echo", "--args", "@"+file)
	if code != 0 || strings.TrimSpace(stdout) != big {
		t.Errorf("--args @FILE: exit %d, %d bytes out, stderr %s", code, len(stdout), stderr)
	}
	old := stdin
	t.Cleanup(func() { stdin = old })
	stdin = strings.NewReader(`{"a":40,"b":2}`)
	code, stdout, stderr = runCLI("--config", cfg, "call", "fixture__add", "--args", "-")
	if code != 0 || strings.TrimSpace(stdout) != `{"sum":42}` {
		t.Errorf("--args -: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}

	code, stdout, stderr = runCLI("call", "--help")
	if code != 0 || stdout != callUsage || stderr != "" {
		t.Errorf("call --help: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if !strings.Contains(callUsage, "2 usage or configuration error (also: --args not a JSON object") {
		t.Errorf("the help text no longer says the exit status of --args that is not an object")
	}

	missing := filepath.Join(t.TempDir(), "nope.json")
	for _, tc := range []struct {
		args   string
		stderr string
	}{
		{`[1,2]`, `toolhost: --args must be a JSON object, like '{"key":"value"}': got [1,2]`},
		{`"text"`, `toolhost: --args must be a JSON object, like '{"key":"value"}': got "text"`},
		{`null`, `toolhost: --args must be a JSON object, like '{"key":"value"}': got null`},
		{`{nope`, `toolhost: --args is not valid JSON: {nope`},
		{"@" + missing, "toolhost: --args @" + missing + ": open " + missing + ": no such file or directory"},
	} {
		code, stdout, stderr := runCLI("--config", cfg, "call", "fixture__echo", "--args", tc.args)
		if code != 2 || stdout != "" || !strings.HasPrefix(stderr, tc.stderr+"\n") {
			t.Errorf("--args %s: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, stdout, stderr, tc.stderr)
		}
	}
}

// TestCLIHints: the CLI adds its own next step to the host's errors, which
// name no command.
func TestCLIHints(t *testing.T) {
	cfg := writeConfig(t, fixtureConfig)
	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"call", "fixture__ech"}, 3,
			"toolhost: call failed: unknown tool \"fixture__ech\"; did you mean fixture__echo? Call a tool by its exact name\nRun 'toolhost tools' to list the tools you may call.\n"},
		{[]string{"call", "--profile", "review", "fixture__add"}, 4,
			"toolhost: call denied: tool \"fixture__add\" is not allowed in profile \"review\" (rule profiles.review.deny[0] \"fixture__add\"); calling it again will fail the same way: use one of the tools in the list of available tools\nRun 'toolhost tools --profile review' to list the tools you may call.\n"},
		{[]string{"call", "--profile", "needs", "fixture__echo"}, 3, "Run 'toolhost status' for the state of every backend.\n"},
	}
	for _, tc := range cases {
		code, _, stderr := runCLI(append([]string{"--config", cfg, "--log-level", "off"}, tc.args...)...)
		if code != tc.code || !strings.HasSuffix(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr\n%s\nwant %d and a stderr ending\n%s", tc.args, code, stderr, tc.code, tc.stderr)
		}
	}
}

// TestCLICheckPlugins: check reports a missing .wasm and a memory cap
// below the module's declared minimum at their file:line, starting nothing.
func TestCLICheckPlugins(t *testing.T) {
	wasm := wasmbuild.Build(t, filepath.Join(testutil.Root(), "testdata", "plugins"), "./echo")
	cfg := writeConfig(t, `[plugins.gone]
path = "gone.wasm"

[plugins.small]
path = "`+wasm+`"
memory = "1MiB"
`)
	code, stdout, stderr := runCLI("--config", cfg, "check")
	want := "toolhost: invalid configuration:\n" +
		cfg + ":2: plugins.gone.path: " + filepath.Join(filepath.Dir(cfg), "gone.wasm") + " does not exist: build the plugin (make plugins) or fix the path (relative paths are relative to the configuration file)\n" +
		cfg + `:6: plugins.small.memory: memory 1MiB is below the 2304KiB the module declares as its minimum: set memory >= "2304KiB"` + "\n"
	if code != 2 || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr\n%s\nwant 2 and\n%s", code, stdout, stderr, want)
	}
}

// TestCLIInspectReport: inspect lists each import once, shows a tool's
// title and annotations, and --json does not escape <, > and & ("->"
// stays "->").
func TestCLIInspectReport(t *testing.T) {
	dir := filepath.Join(testutil.Root(), "plugins")
	fetch := wasmbuild.Build(t, dir, "./fetch")
	code, stdout, stderr := runCLI("inspect", fetch)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"\n    title: Fetch URL\n", "\n    annotations: readOnlyHint=true, openWorldHint=true\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("inspect lacks %q:\n%s", want, stdout)
		}
	}
	// Go's linker imports fd_write twice.
	if n := strings.Count(stdout, " fd_write "); n != 1 {
		t.Errorf("fd_write is listed %d times, want once", n)
	}
	jq := wasmbuild.Build(t, dir, "./jq")
	for _, args := range [][]string{{"inspect", jq}, {"inspect", "--json", jq}} {
		code, stdout, _ := runCLI(args...)
		if code != 0 || strings.Contains(stdout, `\u003e`) || !strings.Contains(stdout, `.price > 10`) {
			t.Errorf("%v: exit %d; want > unescaped:\n%.2000s", args, code, stdout)
		}
	}
	code, stdout, _ = runCLI("inspect", "--json", jq)
	var r struct {
		Imports []struct{ Module, Name, Signature string } `json:"imports"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &r) != nil {
		t.Fatalf("inspect --json: exit %d\n%s", code, stdout)
	}
	seen := map[string]bool{}
	for _, im := range r.Imports {
		k := im.Module + " " + im.Name + " " + im.Signature
		if seen[k] {
			t.Errorf("import %s listed twice", k)
		}
		seen[k] = true
		if im.Signature != "" && !strings.Contains(im.Signature, ") -> (") {
			t.Errorf("signature %q", im.Signature)
		}
	}
}
