package host_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
)

// serveHTTPOn runs the fixture server over Streamable HTTP on the loopback
// port (reserved with testutil.FreePort), and returns at once: it listens
// a moment later, as a server under docker compose or systemd that comes
// up after toolhost. The process is killed when the test ends.
func serveHTTPOn(t *testing.T, port int) {
	t.Helper()
	cmd := exec.Command(testutil.Fixture(t), "-http", fmt.Sprintf("127.0.0.1:%d", port))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

// TestCallWaitsForComingBackend (issue 20, item 1): a call made right after
// New to a backend whose first start failed and that is waiting out its
// restart backoff (a stdio server that exited during initialize; an HTTP
// server that refused the connection because it is started only after
// New) waits
// for it within the call's deadline and gets the result, instead of
// failing at once with the first attempt's error.
func TestCallWaitsForComingBackend(t *testing.T) {
	for _, c := range []struct{ name, server string }{
		{"stdio", `command = "@FIXTURE@"
args = ["-mode", "exit-init", "-once", "@ONCE@"]`},
		{"http", `url = "@URL@"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			server := strings.ReplaceAll(c.server, "@ONCE@", filepath.Join(t.TempDir(), "started"))
			port := testutil.FreePort(t)
			server = strings.ReplaceAll(server, "@URL@", fmt.Sprintf("http://127.0.0.1:%d/mcp", port))
			h, _ := policyHost(t, `
[servers.m3]
`+server+`
restart_backoff = { min = "500ms", max = "1s" }
`, nil)
			if st := statusOf(h, "m3"); st.State != host.StateRestarting {
				t.Fatalf("m3 after New: %s (%s); want restarting after its failed first start", st.State, st.LastError)
			}
			if c.name == "http" {
				// Nothing listened at New; the server comes up now, while
				// m3 waits out its restart backoff.
				serveHTTPOn(t, port)
			}
			res, err := h.CallTool(context.Background(), "m3__echo", map[string]any{"text": "waited"})
			if err != nil {
				t.Fatalf("call to m3 while it comes up: %v", err)
			}
			if got := text(t, res); got != "waited" {
				t.Fatalf("result %q", got)
			}
		})
	}
}

// TestCallToGivenUpBackend: a call waiting for a backend that keeps failing
// to start ends when max_restarts ends the wait (not at its deadline), with
// ErrBackendUnavailable and the backend's last error; a call to a backend
// that has failed (given up) fails at once.
func TestCallToGivenUpBackend(t *testing.T) {
	h, _ := policyHost(t, `
[servers.bad]
command = "@FIXTURE@"
args = ["-mode", "exit-init"]
restart_backoff = { min = "50ms", max = "100ms" }
max_restarts = 2
timeout = "10m"
`, nil)
	_, err := h.CallTool(context.Background(), "bad__echo", nil)
	if !errors.Is(err, host.ErrBackendUnavailable) || errors.Is(err, host.ErrTimeout) || !strings.Contains(err.Error(), "status 3") || !strings.Contains(err.Error(), "gave up") {
		t.Fatalf("got %v; want ErrBackendUnavailable with the last error (exit status 3) once it gave up", err)
	}
	if st := statusOf(h, "bad"); st.State != host.StateFailed {
		t.Fatalf("bad is %s, want failed", st.State)
	}
	// Failed: at once. (Generous: "at once" is far below the 10m timeout.)
	t0 := time.Now()
	if _, err := h.CallTool(context.Background(), "bad__echo", nil); !errors.Is(err, host.ErrBackendUnavailable) {
		t.Fatalf("call to a failed backend: %v", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("call to a failed backend took %v; want it at once", d)
	}
}

// TestOneDeadlinePerCall (issue 20, item 5): waiting for a backend to come
// up is inside the call's one deadline. A stdio server that takes 0.8× its
// timeout to start, called with a tool that takes 0.8× to answer, fails at
// about the timeout with ErrTimeout saying which deadline passed, instead
// of answering after 1.6× (the wait and then a fresh timeout). With a
// caller's earlier deadline, the error says it was the caller's.
func TestOneDeadlinePerCall(t *testing.T) {
	const timeout = 2 * time.Second
	for _, c := range []struct {
		name   string
		caller time.Duration // the caller's deadline; 0 for none
		want   string        // what the error says about the deadline
	}{
		{"backend timeout", 0, "the backend's timeout (2s)"},
		{"caller deadline", timeout, "the caller's deadline"},
	} {
		t.Run(c.name, func(t *testing.T) {
			own := timeout
			if c.caller > 0 {
				own = time.Hour
			}
			h, _ := policyHost(t, fmt.Sprintf(`
[servers.fx]
command = "@FIXTURE@"
args = ["-start-delay", "%v"]
start = "lazy"
timeout = "%v"
`, timeout*8/10, own), nil)
			ctx := context.Background()
			if c.caller > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.caller)
				defer cancel()
			}
			t0 := time.Now()
			_, err := h.CallTool(ctx, "fx__sleep", map[string]any{"ms": (timeout * 8 / 10).Milliseconds()})
			d := time.Since(t0)
			if !errors.Is(err, host.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v after %v; want ErrTimeout (and DeadlineExceeded) at about %v", err, d, timeout)
			}
			t.Logf("after %v: %v", d, err)
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
			// The deadline ran from the call's start: never before it; and
			// the answer came back at it, well before start + answer
			// (1.6×) plus the machine's slack.
			if d < timeout || d >= 2*timeout {
				t.Errorf("the call took %v; want about %v (at least it, and well under %v)", d, timeout, 2*timeout)
			}
		})
	}
}

// TestWithCallStart: a call whose context says it began earlier
// (WithCallStart, as toolhost call passes the command's start) has its
// deadline from then: one already passed fails the call with ErrTimeout
// naming the backend's timeout; its fallback has a deadline of its own;
// a start in the future is ignored.
func TestWithCallStart(t *testing.T) {
	h, _ := policyHost(t, `
[servers.fx]
command = "@FIXTURE@"
timeout = "1s"

[servers.fy]
command = "@FIXTURE@"

[tools.fx__echo]
fallback = "fy__echo"
`, nil)
	bg := context.Background()
	past := host.WithCallStart(bg, time.Now().Add(-time.Minute))
	_, err := h.CallTool(past, "fx__add", map[string]any{"a": 1, "b": 2})
	if !errors.Is(err, host.ErrTimeout) || !strings.Contains(err.Error(), "the backend's timeout (1s) passed") {
		t.Fatalf("call begun a minute ago: %v; want ErrTimeout naming the backend's timeout", err)
	}
	res, err := h.CallTool(past, "fx__echo", map[string]any{"text": "fell back"})
	if err != nil || text(t, res) != "fell back" {
		t.Fatalf("fallback of a call begun a minute ago: %v %v; want the fallback's result", res, err)
	}
	future := host.WithCallStart(bg, time.Now().Add(time.Hour))
	if res, err := h.CallTool(future, "fx__echo", map[string]any{"text": "now"}); err != nil || text(t, res) != "now" {
		t.Fatalf("call with a start in the future: %v %v", res, err)
	}
}
