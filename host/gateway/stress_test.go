package gateway_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/gateway"
	"github.com/toolhost/toolhost/internal/procgroup"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

var (
	stressFor     = flag.Duration("stress", 0, "run TestStressServe for this long (make stress-serve: 60s)")
	stressKill    = flag.Duration("stress-kill", 10*time.Second, "TestStressServe kills the stdio backend svc this often")
	stressClients = flag.Int("stress-clients", 50, "TestStressServe's concurrent HTTP clients (one session each)")
)

// The host's deadline (call_timeout) bounds every call: the gateway's
// clients set none that the host could see.
const stressServeConfig = `
[host]
call_timeout = "5s"

[servers.svc]
command = "@FIXTURE@"
restart_backoff = { min = "50ms", max = "1s" }
max_restarts = 1000

[servers.steady]
command = "@FIXTURE@"

[plugins.pdk]
path = "@PDKECHO@"
instances = 2
`

type serveCall struct {
	tool string
	args map[string]any
}

// TestStressServe: many go-sdk HTTP clients, one session each, call a mix
// of Wasm-plugin and stdio tools through an in-process gateway (toolhost
// serve's Handler on a loopback server) while the stdio backend svc is
// killed (SIGKILL) again and again. Every failure must be one the kill
// explains, and only on svc's tools: an isError result whose text carries
// host.ErrConnectionLost (a call in flight on the killed server),
// host.ErrBackendUnavailable (one that waited for the restart past its
// deadline) or host.ErrCircuitOpen. Anything else (a protocol error, a
// transport error, a failure on another backend) is unexplained. Without
// -race, resident memory must not grow by more than 10% between the start
// of the timed load (after a warm-up, as in host's TestStress) and its end,
// both taken with the clients idle.
//
//	go test -run TestStressServe ./host/gateway -stress 60s                   # make stress-serve
//	go test -race -run TestStressServe ./host/gateway -stress 8s -stress-kill 2s  # in make test
func TestStressServe(t *testing.T) {
	if *stressFor == 0 {
		t.Skip("set -stress DURATION to run (make stress-serve)")
	}
	dir := filepath.Join(testutil.Root(), "testdata", "plugins")
	src := strings.NewReplacer("@FIXTURE@", testutil.Fixture(t), "@PDKECHO@", wasmbuild.Build(t, dir, "./pdkecho")).Replace(stressServeConfig)
	cfg, err := config.Parse([]byte(src), &config.Options{Name: "stress.toml", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "stress", Output: io.Discard})
	h, err := host.New(context.Background(), cfg, &host.Options{Logger: logger, TerminateGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	g, err := gateway.New(h, &gateway.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	url := srv.URL + "/mcp"

	mix := []serveCall{
		{"svc__echo", map[string]any{"text": "s"}},
		{"svc__add", map[string]any{"a": 1, "b": 2}},
		{"steady__echo", map[string]any{"text": "s"}},
		{"pdk__echo", map[string]any{"text": "p"}},
	}
	var pids []int
	for _, st := range h.Status() {
		if st.Pid > 0 {
			pids = append(pids, st.Pid)
		}
	}

	sessions := make([]*mcp.ClientSession, *stressClients)
	for i := range sessions {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		cs, err := connectHTTP(ctx, url, "")
		cancel()
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		sessions[i] = cs
		defer cs.Close()
	}
	for _, c := range mix {
		res, err := sessions[0].CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil || res.IsError {
			t.Fatalf("warm-up %s: %v %v", c.tool, err, res)
		}
	}
	if !raceEnabled {
		warmPlugin(t, h, "pdk__echo", map[string]any{"text": "p"})
	}

	explained := []string{host.ErrConnectionLost.Error(), host.ErrBackendUnavailable.Error(), host.ErrCircuitOpen.Error()}
	var (
		calls, expected atomic.Int64
		mu              sync.Mutex
		unexpected      []string
		nUnexpected     int
		lat             = make([]*testutil.Reservoir, len(sessions))
	)
	for i := range lat {
		lat[i] = testutil.NewReservoir(uint64(i))
	}
	run := func(d time.Duration, kill bool) (kills int) {
		ctx, stop := context.WithTimeout(context.Background(), d)
		defer stop()
		var wg sync.WaitGroup
		for i, cs := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(i), 3))
				for ctx.Err() == nil {
					c := mix[rng.IntN(len(mix))]
					// A failsafe only: the host's call_timeout (5s) ends
					// every call first.
					cctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
					t0 := time.Now()
					res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
					d := time.Since(t0)
					cancel()
					calls.Add(1)
					lat[i].Add(d)
					switch {
					case err == nil && !res.IsError:
					case err == nil && strings.HasPrefix(c.tool, "svc__") &&
						slices.ContainsFunc(explained, func(s string) bool { return strings.Contains(text(res), s) }):
						expected.Add(1)
					default:
						mu.Lock()
						nUnexpected++
						if len(unexpected) < 20 {
							msg := fmt.Sprint(err)
							if err == nil {
								msg = "isError: " + text(res)
							}
							unexpected = append(unexpected, c.tool+": "+msg)
						}
						mu.Unlock()
					}
				}
			}()
		}
		if kill {
			tick := time.NewTicker(*stressKill)
			defer tick.Stop()
			for done := false; !done; {
				select {
				case <-ctx.Done():
					done = true
				case <-tick.C:
					if pid := statusOf(h, "svc").Pid; pid > 0 {
						pids = append(pids, pid)
						if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
							t.Errorf("kill %d: %v", pid, err)
						}
						kills++
					}
				}
			}
		}
		wg.Wait()
		return kills
	}

	// A second of the full load without kills creates every session
	// buffer, instance and connection the load needs; the starting RSS is
	// taken after it, with the clients idle, as the ending RSS is.
	run(time.Second, false)
	calls.Store(0)
	expected.Store(0)
	for _, s := range lat {
		s.Reset()
	}
	rssStart := testutil.SettledRSS(t)
	gStart := runtime.NumGoroutine()
	kills := run(*stressFor, true)
	rssEnd := testutil.SettledRSS(t)
	gEnd := runtime.NumGoroutine()
	eventually(t, "svc ready after the last kill", func() bool { return statusOf(h, "svc").State == host.StateReady })

	var all []time.Duration
	var longest time.Duration
	for _, s := range lat {
		all = append(all, s.Sample...)
		longest = max(longest, s.Max)
	}
	slices.Sort(all)
	pct := func(p float64) time.Duration { return all[int(float64(len(all)-1)*p)].Round(time.Microsecond) }
	st := statusOf(h, "svc")
	growth := float64(rssEnd-rssStart) / float64(rssStart) * 100
	summary := fmt.Sprintf("stress-serve: %v, %d HTTP clients, %d kills (svc restarts %d): %d calls (%.0f/s), %d expected errors, %d unexplained; latency p50 %v p99 %v max %v; RSS %d KiB -> %d KiB (%+.1f%%); goroutines %d -> %d",
		*stressFor, len(sessions), kills, st.Restarts, calls.Load(), float64(calls.Load())/stressFor.Seconds(), expected.Load(), nUnexpected,
		pct(0.5), pct(0.99), longest.Round(time.Microsecond), rssStart>>10, rssEnd>>10, growth, gStart, gEnd)
	t.Log(summary)
	fmt.Fprintln(os.Stderr, summary)
	for _, u := range unexpected {
		t.Errorf("unexplained error: %s", u)
	}
	if kills > 0 && st.Restarts < kills {
		t.Errorf("svc restarted %d times after %d kills", st.Restarts, kills)
	}
	switch {
	case raceEnabled:
		t.Logf("RSS growth not checked under -race (its shadow memory grows by design); run make stress-serve")
	case growth > 10:
		t.Errorf("RSS grew by %.1f%% (target: under 10%%)", growth)
	}

	for _, cs := range sessions {
		cs.Close()
	}
	srv.Close()
	g.Close()
	if err := h.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	for _, pid := range pids {
		eventually(t, fmt.Sprintf("process group %d gone", pid), func() bool { return len(procgroup.Members(pid)) == 0 })
	}
}

// warmPlugin calls a Wasm tool until each of its 2 instances has served
// about 25,000 calls: a standard-Go guest's linear memory grows until its
// runtime's heap reaches its first GC goals (see host's warmWasm), and the
// RSS baseline must measure what the load retains, not the guest's start.
func warmPlugin(t *testing.T, h *host.Host, tool string, args map[string]any) {
	const perInstance, instances, callers = 25000, 2, 4
	var wg sync.WaitGroup
	var failed atomic.Value
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perInstance * instances / callers {
				if _, err := h.CallTool(context.Background(), tool, args); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("warming %s: %v", tool, err)
	}
}

func statusOf(h *host.Host, name string) host.BackendStatus {
	for _, s := range h.Status() {
		if s.Name == name {
			return s
		}
	}
	return host.BackendStatus{}
}
