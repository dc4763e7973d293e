package host_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
	"github.com/toolhost/toolhost/sandbox"
)

// TestQueuedTimeoutsDoNotOpenTheBreaker: with every instance of a plugin
// busy, calls whose deadline passes while they wait fail with
// sandbox.ErrBusy and do not count as failures of the plugin: its circuit
// breaker stays closed for everyone.
func TestQueuedTimeoutsDoNotOpenTheBreaker(t *testing.T) {
	entered := make(chan struct{}, 16)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.Write([]byte("released"))
	}))
	defer srv.Close()
	dir := filepath.Join(testutil.Root(), "testdata", "plugins")
	h := newHost(t, fmt.Sprintf(`
[plugins.net]
path = %q
allowed_hosts = ["127.0.0.1"]
instances = 1
timeout = "30s"
health_check = "none"
circuit_breaker = { failures = 2, cooldown = "1m" }
`, wasmbuild.Build(t, dir, "./netout")))
	args := map[string]any{"url": srv.URL + "/hold"}
	first := make(chan error, 1)
	go func() {
		_, err := h.CallTool(context.Background(), "net__fetch", args)
		first <- err
	}()
	<-entered
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err := h.CallTool(ctx, "net__fetch", args)
		cancel()
		if !errors.Is(err, sandbox.ErrBusy) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("queued call %d: %v; want sandbox.ErrBusy and DeadlineExceeded", i+1, err)
		}
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the call holding the instance: %v", err)
	}
	res, err := h.CallTool(context.Background(), "net__fetch", args)
	if err != nil {
		t.Fatalf("after the queue drained: %v (a queued timeout opened the circuit?)", err)
	}
	if got := text(t, res); got != "200 released" {
		t.Fatalf("result %q", got)
	}
	if st := statusOf(h, "net"); st.Circuit != host.CircuitClosed {
		t.Errorf("circuit %s, want closed", st.Circuit)
	}
}
