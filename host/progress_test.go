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
			ctx := host.WithProgress(context.Background(), func(p host.Progress) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, fmt.Sprintf("%v/%v %s", p.Progress, p.Total, p.Message))
			})
			res, err := h.CallTool(ctx, backend+"__progress", map[string]any{"steps": 3})
			if err != nil {
				t.Fatal(err)
			}
			if s := text(t, res); !strings.HasPrefix(s, "done; token toolhost-") {
				t.Errorf("result %q: the call carried no progress token", s)
			}
			mu.Lock()
			defer mu.Unlock()
			// Sent before the result; the last may race it (over HTTP they
			// come on one stream but are dispatched apart).
			want := "1/3 step 1,2/3 step 2,3/3 step 3"
			if s := strings.Join(got, ","); s == "" || !strings.HasPrefix(want, s) {
				t.Errorf("progress %q, want (a prefix of) %q", s, want)
			}
			res, err = h.CallTool(context.Background(), backend+"__progress", map[string]any{"steps": 3})
			if err != nil || text(t, res) != "done; token <nil>" {
				t.Errorf("a call without WithProgress: %v %v", res, err)
			}
		})
	}
}
