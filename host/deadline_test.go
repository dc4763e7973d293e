package host_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
)

// TestPluginDeadline checks that a plugin call is bounded by the plugin's
// timeout, else [host] call_timeout, else the caller's earlier deadline: the
// host sets it (one deadline per call, its only owner), the sandbox enforces
// it.
func TestPluginDeadline(t *testing.T) {
	h, _ := policyHost(t, `
[host]
cache_dir = "@CACHE@"
call_timeout = "300ms"

[plugins.own]
path = "@ECHO@"
timeout = "200ms"

[plugins.dflt]
path = "@ECHO@"

[plugins.long]
path = "@ECHO@"
timeout = "1m"
`, nil)
	bg := context.Background()
	for _, c := range []struct {
		name   string
		tool   string
		caller time.Duration // the caller's deadline; 0 for none
		want   time.Duration // the deadline that applies
	}{
		{"plugin timeout", "own__sleep", 0, 200 * time.Millisecond},
		{"host call_timeout", "dflt__sleep", 0, 300 * time.Millisecond},
		{"caller deadline", "long__sleep", 250 * time.Millisecond, 250 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			// start before the caller's deadline is set: the call may end
			// exactly at that deadline, which is no sooner than start+caller.
			start := time.Now()
			ctx := bg
			if c.caller > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(bg, c.caller)
				defer cancel()
			}
			_, err := h.CallTool(ctx, c.tool, map[string]any{"text": "20s"})
			if !errors.Is(err, host.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want ErrTimeout and DeadlineExceeded", err)
			}
			if d := time.Since(start); d < c.want || d > c.want+5*time.Second {
				t.Errorf("timed-out call took %v, want about %v", d, c.want)
			}
		})
	}
	// The plugins keep serving.
	if res, err := h.CallTool(bg, "own__echo", map[string]any{"text": "ok"}); err != nil || text(t, res) != "ok" {
		t.Fatalf("after timeouts: %v %v", res, err)
	}
}
