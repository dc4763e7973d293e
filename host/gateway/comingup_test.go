package gateway_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testutil"
)

// lateServer runs the fixture server over Streamable HTTP on a reserved
// loopback port, listening only after delay (a server that comes up after
// toolhost, as under docker compose or systemd), and returns its MCP
// endpoint URL. The process is killed when the test ends.
func lateServer(t *testing.T, delay string) string {
	t.Helper()
	port := testutil.FreePort(t)
	cmd := exec.Command(testutil.Fixture(t), "-http", fmt.Sprintf("127.0.0.1:%d", port), "-start-delay", delay)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// TestCallWaitsForComingBackend (issue 20, item 1): a client that calls a
// tool of a backend still coming up (its first start refused, waiting out
// its restart backoff; its tools not listed yet) gets the result once the
// backend is ready within the call's deadline; when it is not ready by
// then, an isError result saying why and when it is tried again, not a
// protocol error about an unknown tool.
func TestCallWaitsForComingBackend(t *testing.T) {
	for _, c := range []struct {
		name, delay, timeout string
		want                 []string // in the result's text
		isError              bool
	}{
		{"comes up", "1500ms", "1m", []string{"came up"}, false},
		{"not within the deadline", "1h", "1s", []string{"backend unavailable", `backend "m3" still restarting`, "its next start attempt is in", "the backend's timeout (1s) passed"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := start(t, fmt.Sprintf(`
[servers.m3]
url = %q
timeout = %q
restart_backoff = { min = "500ms", max = "1s" }
`, lateServer(t, c.delay), c.timeout))
			cs, err := connectHTTPHandler(t, f)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "m3__echo", Arguments: map[string]any{"text": "came up"}})
			if err != nil {
				t.Fatalf("call while m3 comes up: %v; want a result", err)
			}
			if res.IsError != c.isError {
				t.Fatalf("call while m3 comes up: isError %v (%s), want %v", res.IsError, text(res), c.isError)
			}
			for _, w := range c.want {
				if !strings.Contains(text(res), w) {
					t.Errorf("result %q does not say %q", text(res), w)
				}
			}
		})
	}
}
