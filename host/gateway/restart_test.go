package gateway_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
)

// TestRestartingBackendStaysListed: while a backend waits out its restart
// backoff, its tools stay in the clients' listing, and a call gets an
// isError result that says it is unavailable and when it is tried again.
func TestRestartingBackendStaysListed(t *testing.T) {
	f := start(t, `
[servers.crashy]
command = "@FIXTURE@"
args    = ["-crash-after", "1"]
timeout = "2s"
startup_timeout = "5m"
restart_backoff = { min = "1m", max = "1m" }
`)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	restarting := make(chan struct{}, 1)
	unsubscribe := f.h.Subscribe(func(ev host.Event) {
		if ev.Kind == host.EventState && ev.Backend == "crashy" && ev.State == host.StateRestarting {
			select {
			case restarting <- struct{}{}:
			default:
			}
		}
	})
	defer unsubscribe()
	cs, err := connectHTTPHandler(t, f)
	if err != nil {
		t.Fatal(err)
	}
	echo := &mcp.CallToolParams{Name: "crashy__echo", Arguments: map[string]any{"text": "x"}}
	if res, err := cs.CallTool(ctx, echo); err != nil || res.IsError {
		t.Fatalf("first call: %+v, %v", res, err)
	}
	cs.CallTool(ctx, echo) // the server exits on this one
	select {
	case <-restarting:
	case <-ctx.Done():
		t.Fatal("the backend never went to restarting")
	}
	if names := toolNames(t, cs); !slices.Contains(names, "crashy__echo") {
		t.Errorf("tools while restarting = %v; want crashy__echo still listed", names)
	}
	res, err := cs.CallTool(ctx, echo)
	if err != nil || !res.IsError {
		t.Fatalf("call while restarting = %+v, %v; want an isError result", res, err)
	}
	for _, want := range []string{"backend unavailable", `backend "crashy" still restarting`, "its next start attempt is in"} {
		if !strings.Contains(text(res), want) {
			t.Errorf("call while restarting says %q; want it to contain %q", text(res), want)
		}
	}
}

// connectHTTPHandler serves f's gateway on a test HTTP server (closed with
// the test) and connects a go-sdk client to it as bob.
func connectHTTPHandler(t *testing.T, f *fixture) (*mcp.ClientSession, error) {
	t.Helper()
	srv := newTestServer(t, f)
	cs, err := connectHTTP(context.Background(), srv+"/mcp", "")
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func newTestServer(t *testing.T, f *fixture) string {
	srv := httptest.NewServer(f.g.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestFailedBackendLeavesListing: a backend given up (failed) leaves the
// clients' listing, announced by notifications/tools/list_changed.
func TestFailedBackendLeavesListing(t *testing.T) {
	f := start(t, `
[servers.crashy]
command = "@FIXTURE@"
args    = ["-crash-after", "1"]
startup_timeout = "5m"
max_restarts = 0

[servers.steady]
command = "@FIXTURE@"
startup_timeout = "5m"
`)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "watcher"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: newTestServer(t, f) + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if names := toolNames(t, cs); !slices.Contains(names, "crashy__echo") {
		t.Fatalf("tools at start = %v; want crashy__echo", names)
	}
	echo := &mcp.CallToolParams{Name: "crashy__echo", Arguments: map[string]any{"text": "x"}}
	if res, err := cs.CallTool(ctx, echo); err != nil || res.IsError {
		t.Fatalf("first call: %+v, %v", res, err)
	}
	cs.CallTool(ctx, echo) // the server exits on this one, and is given up
	for slices.Contains(toolNames(t, cs), "crashy__echo") {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("crashy__echo still listed: %v", toolNames(t, cs))
		}
	}
	if names := toolNames(t, cs); !slices.Contains(names, "steady__echo") {
		t.Errorf("tools after crashy failed = %v; want steady's still there", names)
	}
}
