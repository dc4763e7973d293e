package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// TestCallWaitsForComingBackend (issue 20, item 1): `toolhost call` to a
// backend whose first start failed and that is waiting out its restart
// backoff (an HTTP server that listens only 1.5s after toolhost starts, as
// under docker compose or systemd; a stdio server that exits during its
// first initialize) waits for it within the call's deadline and prints the
// result, instead of exiting 3 at once with the first attempt's error.
func TestCallWaitsForComingBackend(t *testing.T) {
	for _, c := range []struct{ name, server string }{
		{"http", `url = "@URL@"`},
		{"stdio", `command = "@FIXTURE@"
args = ["-mode", "exit-init", "-once", "@ONCE@"]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			server := strings.ReplaceAll(c.server, "@ONCE@", filepath.Join(t.TempDir(), "started"))
			if c.name == "http" {
				port := testutil.FreePort(t)
				cmd := exec.Command(testutil.Fixture(t), "-http", fmt.Sprintf("127.0.0.1:%d", port), "-start-delay", "1.5s")
				cmd.Stderr = os.Stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
				server = strings.ReplaceAll(server, "@URL@", fmt.Sprintf("http://127.0.0.1:%d/mcp", port))
			}
			cfg := writeConfig(t, `
[servers.m3]
`+server+`
restart_backoff = { min = "500ms", max = "1s" }
`)
			code, stdout, stderr := runCLI("--config", cfg, "call", "m3__echo", "--args", `{"text":"came up"}`)
			if code != 0 || !strings.Contains(stdout, "came up") {
				t.Fatalf("call while m3 comes up: exit %d, stdout %q, stderr %q; want exit 0 and the result", code, stdout, stderr)
			}
		})
	}
}

// TestCallOneDeadline (issue 20, item 5): `toolhost call`'s one deadline
// runs from the command's start, so starting the backend is inside it: a
// server that takes 0.8× its timeout to start, called with a tool that
// takes 0.8× to answer, fails at about the timeout (exit 3, the error
// naming the backend's timeout) instead of answering after 1.6×.
func TestCallOneDeadline(t *testing.T) {
	const timeout = 2 * time.Second
	cfg := writeConfig(t, fmt.Sprintf(`
[servers.fx]
command = "@FIXTURE@"
args = ["-start-delay", "%v"]
timeout = "%v"
`, timeout*8/10, timeout))
	t0 := time.Now()
	code, stdout, stderr := runCLI("--config", cfg, "call", "fx__sleep", "--args", fmt.Sprintf(`{"ms":%d}`, (timeout*8/10).Milliseconds()))
	d := time.Since(t0)
	if code != exitCallError || !strings.Contains(stderr, "timed out") || !strings.Contains(stderr, "the backend's timeout (2s) passed") {
		t.Fatalf("exit %d after %v, stdout %q, stderr %q; want exit %d, timed out, naming the backend's timeout", code, d, stdout, stderr, exitCallError)
	}
	// At the deadline: never before it, and well before start + answer
	// (1.6×) plus the machine's slack.
	if d < timeout || d >= 2*timeout {
		t.Errorf("the call took %v; want about %v (at least it, and well under %v)", d, timeout, 2*timeout)
	}
}

// TestCallSlowStartOneDeadline: a server that takes 8× its timeout to
// start fails `toolhost call` at the timeout, not once it has started (the
// command does not wait for the start outside the call's deadline). The
// command then stops the server (stdin closed, a grace of 2s, SIGTERM),
// so it ends at about 3× the timeout, well before the start's 8×.
func TestCallSlowStartOneDeadline(t *testing.T) {
	const timeout = time.Second
	cfg := writeConfig(t, fmt.Sprintf(`
[servers.fx]
command = "@FIXTURE@"
args = ["-start-delay", "%v"]
timeout = "%v"
`, 8*timeout, timeout))
	t0 := time.Now()
	code, stdout, stderr := runCLI("--config", cfg, "call", "fx__echo", "--args", `{"text":"x"}`)
	d := time.Since(t0)
	if code != exitCallError || !strings.Contains(stderr, "timed out") {
		t.Fatalf("exit %d after %v, stdout %q, stderr %q; want exit %d, timed out", code, d, stdout, stderr, exitCallError)
	}
	if d < timeout || d >= 6*timeout {
		t.Errorf("the command took %v; want about %v plus the server's stop (at least it, and well before the start's %v)", d, timeout, 8*timeout)
	}
}
