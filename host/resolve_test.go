package host_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/sandbox"
)

// TestCallWaitsForStartingBackend: a call to a tool of a backend that has
// never been ready yet (its first attempt ran out of startup_timeout, as on
// a busy machine, and it is restarting) waits for it within the call's
// deadline and then resolves, instead of failing with "unknown tool"; and
// Tools waits for it too.
func TestCallWaitsForStartingBackend(t *testing.T) {
	once := filepath.Join(t.TempDir(), "started")
	for _, via := range []string{"call", "tools"} {
		t.Run(via, func(t *testing.T) {
			once := once + via
			h, _ := policyHost(t, `
[servers.slow]
command = "@FIXTURE@"
args = ["-mode", "hang", "-once", "`+once+`"]
restart_backoff = { min = "300ms", max = "300ms" }
timeout = "1m"
`, &host.Options{StartupTimeout: 2 * time.Second})
			// New waited for the first attempt, which hung until startup_timeout.
			// (2s: Tools waits up to startup_timeout, which must hold the
			// 300ms backoff and the second start; with 500ms a start under
			// -race on a busy machine sometimes did not fit.)
			st := h.Status()[0]
			if st.State != host.StateRestarting && st.State != host.StateStarting {
				t.Fatalf("after New: %s (%s), want restarting", st.State, st.LastError)
			}
			ctx := context.Background()
			if via == "tools" {
				tools, err := h.Tools(ctx)
				if err != nil || len(tools) == 0 {
					t.Fatalf("Tools: %d tools, %v; want slow's tools", len(tools), err)
				}
				return
			}
			res, err := h.CallTool(ctx, "slow__echo", map[string]any{"text": "waited"})
			if err != nil {
				t.Fatalf("call during start-up: %v", err)
			}
			if got := text(t, res); got != "waited" {
				t.Fatalf("result %q", got)
			}
		})
	}
}

// TestCallToFailedBackendIsUnavailable: a name whose prefix belongs to a
// configured backend that cannot start is ErrBackendUnavailable with that
// backend's error (here a memory cap too small), not ErrUnknownTool; a name
// of no backend stays ErrUnknownTool.
func TestCallToFailedBackendIsUnavailable(t *testing.T) {
	h, _ := policyHost(t, `
[host]
cache_dir = "@CACHE@"

[plugins.textkit]
path = "@ECHO@"
memory = "64KiB"
max_restarts = 0
`, nil)
	if st := h.Status()[0]; st.State != host.StateFailed {
		t.Fatalf("textkit is %s (%s), want failed", st.State, st.LastError)
	}
	_, err := h.CallTool(context.Background(), "textkit__sha256", nil)
	if !errors.Is(err, host.ErrBackendUnavailable) || !errors.Is(err, sandbox.ErrMemoryLimit) || errors.Is(err, host.ErrUnknownTool) {
		t.Fatalf("got %v, want ErrBackendUnavailable with the memory cap error", err)
	}
	if !strings.Contains(err.Error(), `backend "textkit"`) || !strings.Contains(err.Error(), "memory cap") {
		t.Errorf("error %q does not name the backend and its error", err)
	}
	if _, err := h.CallTool(context.Background(), "nobody__sha256", nil); !errors.Is(err, host.ErrUnknownTool) {
		t.Errorf("a name of no backend: %v, want ErrUnknownTool", err)
	}
}

// TestCallToStartingBackendTimesOut: a call that waits for a backend still
// starting gives up at its deadline with ErrBackendUnavailable and
// ErrTimeout, naming the backend's state.
func TestCallToStartingBackendTimesOut(t *testing.T) {
	once := filepath.Join(t.TempDir(), "started")
	h, _ := policyHost(t, `
[servers.slow]
command = "@FIXTURE@"
args = ["-mode", "hang", "-once", "`+once+`"]
restart_backoff = { min = "1h", max = "1h" }
`, &host.Options{StartupTimeout: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := h.CallTool(ctx, "slow__echo", nil)
	if !errors.Is(err, host.ErrBackendUnavailable) || !errors.Is(err, host.ErrTimeout) || !strings.Contains(err.Error(), "still restarting") {
		t.Fatalf("got %v, want ErrBackendUnavailable and ErrTimeout, still restarting", err)
	}
}
