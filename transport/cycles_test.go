package transport_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/procgroup"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
)

// TestConnectCloseCycles connects and closes 1,000 stdio servers (real
// processes, 4 at a time) and 1,000 HTTP sessions, then checks that no
// process of any of them is left and that the goroutine count is back where
// it started (goleak in TestMain then checks every goroutine by name).
func TestConnectCloseCycles(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	bin := testutil.Fixture(t)
	url, _ := fixtureHTTP(t)
	ctx := context.Background()
	before := runtime.NumGoroutine()

	var mu sync.Mutex
	var pids []int
	var wg sync.WaitGroup
	const workers = 4
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				tr := transport.NewStdio(transport.Command{Path: bin}, &transport.StdioOptions{TerminateGrace: 10 * time.Second})
				if _, err := tr.Connect(ctx); err != nil {
					t.Errorf("stdio cycle %d: %v", i, err)
					return
				}
				mu.Lock()
				pids = append(pids, tr.Pid())
				mu.Unlock()
				if err := tr.Close(); err != nil {
					t.Errorf("stdio cycle %d: close: %v", i, err)
				}
				h := transport.NewHTTP(url, &transport.HTTPOptions{Headers: map[string]string{"X-Fixture-Token": "s3cret"}})
				if _, err := h.Connect(ctx); err != nil {
					t.Errorf("http cycle %d: %v", i, err)
					return
				}
				if err := h.Close(); err != nil {
					t.Errorf("http cycle %d: close: %v", i, err)
				}
			}
		}()
	}
	wg.Wait()
	if len(pids) != n {
		t.Fatalf("%d stdio cycles completed, want %d", len(pids), n)
	}
	for _, pid := range pids {
		if left := procgroup.Members(pid); len(left) > 0 {
			t.Fatalf("server %d's process group still has %v after Close", pid, left)
		}
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return runtime.NumGoroutine() <= before },
		func() string {
			return fmt.Sprintf("%d goroutines after %d cycles, %d before", runtime.NumGoroutine(), n, before)
		})
	t.Logf("%d stdio and %d HTTP connect/close cycles: nothing left", n, n)
}
