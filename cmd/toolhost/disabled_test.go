package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
)

// disabledConfig has an enabled server with a description, a disabled
// stdio server whose command would record its start in @MARKER@, and a
// disabled HTTP server (nothing listens there; nothing dials it).
const disabledConfig = `
[servers.fixture]
command = "@FIXTURE@"
description = "the test fixture <b>\tbold"

[servers.off]
command = "/bin/sh"
args = ["-c", "echo off >> '@MARKER@'; exec '@FIXTURE@'"]
enabled = false
description = "kept for later"

[servers.remote]
url = "http://127.0.0.1:1/mcp"
enabled = false

[profiles.p]
recommends = ["off"]
`

func writeDisabledConfig(t *testing.T) (cfg, marker string) {
	t.Helper()
	marker = filepath.Join(t.TempDir(), "started")
	return writeConfig(t, strings.ReplaceAll(disabledConfig, "@MARKER@", marker)), marker
}

func assertNotStarted(t *testing.T, marker string) {
	t.Helper()
	if b, err := os.ReadFile(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the disabled server was started (%q, %v)", b, err)
	}
}

// TestCLICheckDisabled: check lists a disabled backend as disabled, prints
// descriptions, and with --profile warns of a recommended disabled backend,
// without starting it.
func TestCLICheckDisabled(t *testing.T) {
	cfg, marker := writeDisabledConfig(t)
	code, out, errs := runCLI("--config", cfg, "check", "--profile", "p")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"backend fixture: the test fixture <b>\\tbold\n", // (tab escaped)
		"backend off: disabled (enabled = false): starts nothing and offers no tools\n",
		"backend off: kept for later\n",
		"backend remote: disabled (enabled = false): starts nothing and offers no tools\n",
		"recommends off: warning: disabled (enabled = false): its tools are not offered\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "backend fixture: disabled") {
		t.Errorf("an enabled backend is listed as disabled:\n%s", out)
	}
	assertNotStarted(t, marker)

	// A profile that requires a disabled backend is a configuration error
	// naming both.
	bad := writeConfig(t, strings.ReplaceAll(disabledConfig, `recommends = ["off"]`, `requires = ["off"]`))
	code, _, errs = runCLI("--config", bad, "check")
	if code != exitUsage || !strings.Contains(errs, `profiles.p.requires: element 1: backend "off" is disabled (enabled = false) but profile "p" requires it`) {
		t.Fatalf("requires on a disabled backend: exit %d, stderr:\n%s", code, errs)
	}
}

// TestCLIStatusToolsDisabled: status shows a disabled backend with state
// disabled and no process (text and JSON), tools leaves its tools out, and
// a call to one fails saying the backend is disabled.
func TestCLIStatusToolsDisabled(t *testing.T) {
	cfg, marker := writeDisabledConfig(t)
	code, out, errs := runCLI("--config", cfg, "status", "--json")
	if code != exitOK {
		t.Fatalf("status --json: exit %d: %s", code, errs)
	}
	var st []host.BackendStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	states := map[string]host.BackendStatus{}
	for _, s := range st {
		states[s.Name] = s
	}
	for name, want := range map[string]host.State{"fixture": host.StateReady, "off": host.StateDisabled, "remote": host.StateDisabled} {
		if s := states[name]; s.State != want || (want == host.StateDisabled && s.Pid != 0) {
			t.Errorf("status --json: %s is %s pid %d, want %s", name, s.State, s.Pid, want)
		}
	}
	if !strings.Contains(out, `"state": "disabled"`) && !strings.Contains(out, `"state":"disabled"`) {
		t.Errorf("status --json does not say \"disabled\":\n%s", out)
	}

	code, out, errs = runCLI("--config", cfg, "status")
	if code != exitOK {
		t.Fatalf("status: exit %d: %s", code, errs)
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "off" || f[0] == "remote") && !strings.Contains(line, "  disabled  ") {
			t.Errorf("status line %q: want state disabled", line)
		}
	}
	if !strings.Contains(out, "\noff ") {
		t.Errorf("status does not list off:\n%s", out)
	}

	code, out, errs = runCLI("--config", cfg, "tools", "--json")
	if code != exitOK {
		t.Fatalf("tools: exit %d: %s", code, errs)
	}
	if strings.Contains(out, "off__") || !strings.Contains(out, "fixture__echo") {
		t.Errorf("tools lists a disabled backend's tools, or not the fixture's:\n%s", out)
	}

	code, _, errs = runCLI("--config", cfg, "call", "off__echo", "--args", `{"text":"x"}`)
	if code == exitOK || !strings.Contains(errs, "backend disabled") || !strings.Contains(errs, "enabled = false") {
		t.Errorf("call to a disabled backend's tool: exit %d, stderr:\n%s", code, errs)
	}
	assertNotStarted(t, marker)

	// Only disabled backends: no tools, and that is not a failure.
	only := writeConfig(t, "[servers.off]\ncommand = \"@FIXTURE@\"\nenabled = false\n")
	if code, out, errs := runCLI("--config", only, "tools"); code != exitOK || out != "NAME  BACKEND  DESCRIPTION\n" {
		t.Errorf("tools with every backend disabled: exit %d, stdout %q, stderr %s", code, out, errs)
	}
}
