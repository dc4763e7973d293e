package host_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
)

// TestToolTimeoutBeatsBackend: [tools.NAME] timeout replaces the backend's
// for that tool, shorter (the call stops at the tool's and says so) or
// longer (a call the backend's would stop completes).
func TestToolTimeoutBeatsBackend(t *testing.T) {
	h := newHost(t, `
[servers.slow]
command = "@FIXTURE@"
timeout = "30s"
health_check = "none"

[servers.quick]
command = "@FIXTURE@"
timeout = "200ms"
health_check = "none"

[tools.slow__sleep]
timeout = "300ms"

[tools.quick__sleep]
timeout = "30s"
`)
	ctx := context.Background()
	t0 := time.Now()
	_, err := h.CallTool(ctx, "slow__sleep", map[string]any{"ms": 20000})
	var de *host.DeadlineError
	if !errors.Is(err, host.ErrTimeout) || !strings.Contains(err.Error(), "[tools.slow__sleep] timeout (300ms)") {
		t.Fatalf("call past the tool's timeout: %v, want ErrTimeout naming [tools.slow__sleep] timeout", err)
	}
	if errors.As(err, &de) && !strings.Contains(de.By, "tools.slow__sleep") {
		t.Errorf("DeadlineError.By %q", de.By)
	}
	if d := time.Since(t0); d > 15*time.Second {
		t.Errorf("stopped after %v: the tool's 300ms, not the backend's 30s, must stop it", d)
	}
	// Another tool of the same backend keeps the backend's timeout.
	if res, err := h.CallTool(ctx, "slow__sleep", map[string]any{"ms": 1}); err != nil || resultString(res) != "slept 1ms" {
		t.Fatalf("short call: %v %v", res, err)
	}
	// Longer than the backend's 200ms: the tool's 30s lets it finish.
	if res, err := h.CallTool(ctx, "quick__sleep", map[string]any{"ms": 600}); err != nil || resultString(res) != "slept 600ms" {
		t.Fatalf("call within the tool's own timeout but past the backend's: %v %v", res, err)
	}
	// The backend's other tools keep its 200ms.
	if _, err := h.CallTool(ctx, "quick__fail", nil); err != nil {
		t.Fatalf("quick__fail: %v", err)
	}
}

// attemptServer is a Streamable HTTP MCP server on loopback whose tools
// fail every call with a JSON-RPC error (a failure of the backend, which a
// retry = true tool retries) and record when each attempt arrived.
type attemptServer struct {
	url string
	mu  sync.Mutex
	at  map[string][]time.Time
}

func newAttemptServer(t *testing.T, tools ...string) *attemptServer {
	as := &attemptServer{at: map[string][]time.Time{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "attempts", Version: "1"}, nil)
	for _, name := range tools {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, errors.New("unreachable")
			})
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
				as.mu.Lock()
				as.at[p.Name] = append(as.at[p.Name], time.Now())
				as.mu.Unlock()
				return nil, fmt.Errorf("%s: failing as asked", p.Name)
			}
			return next(ctx, method, req)
		}
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close) // after the host's Cleanup (LIFO): the host closes its session first
	as.url = srv.URL
	return as
}

func (as *attemptServer) attempts(tool string) []time.Time {
	as.mu.Lock()
	defer as.mu.Unlock()
	return append([]time.Time(nil), as.at[tool]...)
}

// TestMaxRetriesCapsAttempts: a retry = true tool that the backend fails
// every time is sent at most 1 + max_retries times (default 3 retries),
// with the tool's backoff between attempts; the audit record says how many
// retries were made.
func TestMaxRetriesCapsAttempts(t *testing.T) {
	as := newAttemptServer(t, "never", "twice", "dflt", "slow")
	var mu sync.Mutex
	retries := map[string]int{}
	toml := fmt.Sprintf(`
[servers.rpc]
url = %q
timeout = "60s"
health_check = "none"
circuit_breaker = { failures = 100 }

[tools.rpc__never]
retry = true
max_retries = 0

[tools.rpc__twice]
retry = true
max_retries = 2
backoff = "10ms"

[tools.rpc__dflt]
retry = true
backoff = { initial = "10ms", max = "20ms" }

[tools.rpc__slow]
retry = true
max_retries = 2
backoff = { initial = "400ms", max = "400ms" }
`, as.url)
	cfg, err := config.Parse([]byte(toml), &config.Options{Name: "retries.toml"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(context.Background(), cfg, &host.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Name: "host", Output: testWriter{t}, Level: hclog.Info}),
		Audit: func(r host.AuditRecord) {
			mu.Lock()
			retries[r.Tool] = r.Retries
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	for _, c := range []struct {
		tool     string
		attempts int
	}{{"never", 1}, {"twice", 3}, {"dflt", 1 + config.DefaultMaxRetries}, {"slow", 3}} {
		_, err := h.CallTool(context.Background(), "rpc__"+c.tool, nil)
		if err == nil || !strings.Contains(err.Error(), "failing as asked") {
			t.Fatalf("%s: %v, want the backend's error", c.tool, err)
		}
		if got := len(as.attempts(c.tool)); got != c.attempts {
			t.Errorf("%s: %d attempts reached the server, want %d", c.tool, got, c.attempts)
		}
		mu.Lock()
		if r := retries["rpc__"+c.tool]; r != c.attempts-1 {
			t.Errorf("%s: audit record says %d retries, want %d", c.tool, r, c.attempts-1)
		}
		mu.Unlock()
	}
	// backoff 400ms, ±50% jitter: each wait at least 200ms.
	at := as.attempts("slow")
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < 200*time.Millisecond {
			t.Errorf("slow: attempt %d came %v after the one before, want at least 200ms (backoff 400ms ±50%%)", i+1, gap)
		}
	}
}

// TestFallbackListOrder: a failed call's fallbacks are tried in the order
// listed, each through the pipeline with its own audit record, until one
// succeeds; a fallback's own fallbacks are not followed.
func TestFallbackListOrder(t *testing.T) {
	var mu sync.Mutex
	var recs []host.AuditRecord
	toml := strings.ReplaceAll(`
[servers.p]
command = "@FIXTURE@"
timeout = "100ms"
health_check = "none"

[servers.q]
command = "@FIXTURE@"
timeout = "100ms"
health_check = "none"

[servers.r]
command = "@FIXTURE@"
timeout = "20s"
health_check = "none"

[tools.p__sleep]
fallback = ["q__sleep", "r__sleep", "r__echo"]

[tools.q__sleep]
fallback = "r__add" # not chained: never used for p__sleep's call
`, "@FIXTURE@", testutil.Fixture(t))
	cfg, err := config.Parse([]byte(toml), &config.Options{Name: "fallbacks.toml"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(context.Background(), cfg, &host.Options{
		Logger:         hclog.New(&hclog.LoggerOptions{Name: "host", Output: testWriter{t}, Level: hclog.Info}),
		TerminateGrace: 500 * time.Millisecond,
		Audit: func(r host.AuditRecord) {
			mu.Lock()
			recs = append(recs, r)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	res, err := h.CallTool(context.Background(), "p__sleep", map[string]any{"ms": 400})
	if err != nil || resultString(res) != "slept 400ms" {
		t.Fatalf("call with fallbacks: %v %v, want r__sleep's result", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%s/%s/%s/%s", r.Tool, r.Outcome, r.FallbackFor, r.Fallback))
	}
	want := []string{
		"q__sleep/" + host.OutcomeTimeout + "/p__sleep/",
		"r__sleep/" + host.OutcomeOK + "/p__sleep/",
		"p__sleep/" + host.OutcomeTimeout + "//r__sleep",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("audit records (tool/outcome/fallback_for/fallback):\n got %v\nwant %v", got, want)
	}
	if recs[0].ArgsHMAC != recs[2].ArgsHMAC || recs[1].ArgsHMAC != recs[2].ArgsHMAC {
		t.Error("fallbacks must get the same arguments")
	}
}
