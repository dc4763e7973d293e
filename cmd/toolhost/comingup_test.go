package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
