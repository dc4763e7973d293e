package host_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/host"
)

// TestCallProgress: a call made with WithProgress carries a progress token,
// and the server's notifications/progress reach the caller's callback, in
// order, over stdio and over HTTP; a call without it sends no token.
func TestCallProgress(t *testing.T) {
	h, _ := policyHost(t, `
[servers.stdio]
command = "@FIXTURE@"
args = ["-progress"]

[servers.http]
url = "`+startFixtureHTTP(t, "-progress")+`"
`, nil)
	for _, backend := range []string{"stdio", "http"} {
		t.Run(backend, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			var acks sync.WaitGroup
			ctx := host.WithProgress(context.Background(), func(p host.Progress) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, fmt.Sprintf("%v/%v %s", p.Progress, p.Total, p.Message))
				// The server waits for this before its next report (and
				// its result), so every report is seen in flight.
				acks.Add(1)
				go func() {
					defer acks.Done()
					if _, err := h.CallTool(context.Background(), backend+"__progress_ack", nil); err != nil {
						t.Error(err)
					}
				}()
			})
			res, err := h.CallTool(ctx, backend+"__progress", map[string]any{"steps": 3, "acked": true})
			acks.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if s := text(t, res); !strings.HasPrefix(s, "done; token toolhost-") {
				t.Errorf("result %q: the call carried no progress token", s)
			}
			mu.Lock()
			defer mu.Unlock()
			if want := "1/3 step 1,2/3 step 2,3/3 step 3"; strings.Join(got, ",") != want {
				t.Errorf("progress %q, want %q", strings.Join(got, ","), want)
			}
			res, err = h.CallTool(context.Background(), backend+"__progress", map[string]any{"steps": 3})
			if err != nil || text(t, res) != "done; token <nil>" {
				t.Errorf("a call without WithProgress: %v %v", res, err)
			}
		})
	}
}
