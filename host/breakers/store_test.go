// Package breakers_test tests the circuit breaker state a Host keeps in its
// store (host/breaker_store.go) on both engines: a restart on one SQLite file,
// and two Hosts (replicas) on one PostgreSQL database. It is a package of its
// own because PostgreSQL (internal/pgtest) runs as a child of the test binary
// for the whole run, which the host package's fault tests would count as a
// child process left behind.
package breakers_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/pgtest"
	"github.com/toolhost/toolhost/internal/testutil"
)

func TestMain(m *testing.M) {
	code := testutil.Main(m)
	pgtest.Stop()
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreCurrent()); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func statusOf(h *host.Host, name string) host.BackendStatus {
	for _, s := range h.Status() {
		if s.Name == name {
			return s
		}
	}
	return host.BackendStatus{}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// breakerConfig is a backend whose circuit opens at its first failure (a
// call of sleep past the 150ms timeout) and stays open for a minute, with
// its state in the store at url.
const breakerConfig = `
[store]
url = "@URL@"

[servers.flaky]
command = "@FIXTURE@"
timeout = "150ms"
health_check = "none"
circuit_breaker = { failures = 1, cooldown = "1m" }
`

// breakerHost starts a Host on breakerConfig with the store at url; events
// (if not nil) gets its events.
func breakerHost(t *testing.T, url string, events func(host.Event)) *host.Host {
	t.Helper()
	toml := strings.NewReplacer("@URL@", url, "@FIXTURE@", testutil.Fixture(t)).Replace(breakerConfig)
	cfg, err := config.Parse([]byte(toml), &config.Options{Name: "breakers.toml"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(context.Background(), cfg, &host.Options{
		Logger:         hclog.New(&hclog.LoggerOptions{Name: "host", Output: testWriter{t}, Level: hclog.Info}),
		TerminateGrace: 500 * time.Millisecond,
		Events:         events,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// tripBreakers makes one call of flaky__sleep time out, which opens the
// backend's circuit and the tool's.
func tripBreakers(t *testing.T, h *host.Host) {
	t.Helper()
	if _, err := h.CallTool(context.Background(), "flaky__sleep", map[string]any{"ms": 5000}); !errors.Is(err, host.ErrTimeout) {
		t.Fatalf("slow call: %v, want ErrTimeout", err)
	}
	if st := statusOf(h, "flaky"); st.Circuit != host.CircuitOpen || st.CircuitFrom != "" {
		t.Fatalf("after a failure: circuit %q from %q, want open here", st.Circuit, st.CircuitFrom)
	}
}

// wantOpenFromStore checks that h refuses a call of flaky__echo fast with
// a circuit opened by another process, and says so in its status.
func wantOpenFromStore(t *testing.T, h *host.Host) {
	t.Helper()
	t0 := time.Now()
	_, err := h.CallTool(context.Background(), "flaky__echo", map[string]any{"text": "x"})
	var coe *host.CircuitOpenError
	if !errors.As(err, &coe) || coe.Backend != "flaky" || coe.OpenedBy == "" || coe.Failures != 1 {
		t.Fatalf("call with the circuit open in the store: %v, want a CircuitOpenError opened by another process", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("refused after %v: an open circuit must fail fast", d)
	}
	if d := time.Until(coe.RetryAt); d < 30*time.Second || d > time.Minute {
		t.Errorf("RetryAt in %v, want the rest of the 1m cooldown", d)
	}
	if !strings.Contains(err.Error(), "opened by "+coe.OpenedBy) {
		t.Errorf("error %q does not say who opened it", err)
	}
	st := statusOf(h, "flaky")
	if st.Circuit != host.CircuitOpen || !strings.HasPrefix(st.CircuitFrom, "store: ") {
		t.Errorf("status: circuit %q from %q, want open from the store", st.Circuit, st.CircuitFrom)
	}
	if f := st.OpenToolsFrom["flaky__sleep"]; !strings.HasPrefix(f, "store: ") {
		t.Errorf("status: open tools %v from %v, want flaky__sleep open from the store", st.OpenTools, st.OpenToolsFrom)
	}
}

// TestBreakerSurvivesRestart: a circuit opened by one Host is open in the
// next Host started on the same SQLite file, until its open period ends.
func TestBreakerSurvivesRestart(t *testing.T) {
	url := "sqlite://" + filepath.Join(t.TempDir(), "toolhost.db")
	h1 := breakerHost(t, url, nil)
	tripBreakers(t, h1)
	if err := h1.Close(); err != nil { // flushes the queued writes
		t.Fatal(err)
	}
	h2 := breakerHost(t, url, nil)
	wantOpenFromStore(t, h2)
}

// TestBreakerSharedByReplicas: two Hosts on one PostgreSQL database; a
// circuit opened in one is open in the other within its refresh (waited
// for by the other's circuit event), and a closed circuit elsewhere stays
// closed here.
func TestBreakerSharedByReplicas(t *testing.T) {
	url := pgtest.URL(t)
	a := breakerHost(t, url, nil)
	var mu sync.Mutex
	opened := map[string]bool{}
	sawOpen := make(chan struct{})
	b := breakerHost(t, url, func(ev host.Event) {
		if ev.Kind != host.EventCircuit || ev.Backend != "flaky" || ev.Circuit != host.CircuitOpen {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if opened[ev.Tool] {
			return
		}
		opened[ev.Tool] = true
		if opened[""] && opened["flaky__sleep"] {
			close(sawOpen)
		}
	})
	if _, err := b.CallTool(context.Background(), "flaky__echo", map[string]any{"text": "x"}); err != nil {
		t.Fatalf("replica b before: %v", err)
	}
	tripBreakers(t, a)
	select {
	case <-sawOpen:
	case <-time.After(30 * time.Second):
		t.Fatalf("replica b never saw the circuits replica a opened: status %+v", statusOf(b, "flaky"))
	}
	wantOpenFromStore(t, b)
}
