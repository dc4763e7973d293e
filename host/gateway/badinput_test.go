package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
)

// stats returns the fixture server's counters (calls served, calls whose
// client cancelled them), asked through the host directly.
func stats(t *testing.T, h *host.Host) (calls, cancelled int64) {
	t.Helper()
	res, err := h.CallTool(context.Background(), "fx__stats", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var s struct{ Calls, Cancelled int64 }
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &s)
	return s.Calls, s.Cancelled
}

// eventually is testutil.Eventually with waitTimeout: the counters it
// reads are the fixture server's, which sends no event.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, waitTimeout, cond, "timed out waiting for ", what)
}

// TestClientCancelsAndDisconnects: notifications/cancelled from the
// client, a client whose connection drops mid-call, and a session DELETEd
// mid-call all cancel the upstream call.
func TestClientCancelsAndDisconnects(t *testing.T) {
	f := start(t, testConfig)
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	url := srv.URL + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	const sleep = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fx__sleep","arguments":{"ms":600000}}}`

	for _, how := range []string{"cancel", "disconnect", "delete"} {
		t.Run(how, func(t *testing.T) {
			calls0, cancelled0 := stats(t, f.h)
			// stats counts itself: the sleep call has arrived when the count
			// is ahead of the polls.
			polls := int64(0)
			reached := func() bool { polls++; c, _ := stats(t, f.h); return c-calls0-polls >= 1 }
			var stop func()
			done := make(chan struct{})
			switch how {
			case "cancel":
				cs, err := connectHTTP(ctx, url, "bob-token-0123456789ab")
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				callCtx, cancelCall := context.WithCancel(ctx)
				stop = cancelCall
				go func() {
					defer close(done)
					cs.CallTool(callCtx, &mcp.CallToolParams{Name: "fx__sleep", Arguments: map[string]any{"ms": 600000}})
				}()
			default:
				_, _, hdr := post(t, url, "", initialize)
				sid := hdr.Get("Mcp-Session-Id")
				post(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				reqCtx, cut := context.WithCancel(ctx)
				go func() {
					defer close(done)
					req, _ := http.NewRequestWithContext(reqCtx, "POST", url, strings.NewReader(sleep))
					req.Header.Set("Authorization", "Bearer bob-token-0123456789ab")
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					req.Header.Set("Mcp-Session-Id", sid)
					if resp, err := http.DefaultClient.Do(req); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}()
				stop = cut
				if how == "delete" {
					stop = func() {
						req, _ := http.NewRequest("DELETE", url, nil)
						req.Header.Set("Authorization", "Bearer bob-token-0123456789ab")
						req.Header.Set("Mcp-Session-Id", sid)
						if resp, err := http.DefaultClient.Do(req); err == nil {
							resp.Body.Close()
						}
						cut()
					}
				}
			}
			eventually(t, "the sleep call to reach the server", reached)
			stop()
			eventually(t, "the server to see the call cancelled", func() bool { _, c := stats(t, f.h); return c == cancelled0+1 })
			<-done
		})
	}
	var outcomes, detail []string
	for _, r := range f.records() {
		if r.Tool == "fx__sleep" {
			outcomes = append(outcomes, r.Outcome)
			detail = append(detail, fmt.Sprintf("%s after %.0f ms: %s", r.Outcome, r.LatencyMS, r.Error))
		}
	}
	if want := []string{host.OutcomeCanceled, host.OutcomeCanceled, host.OutcomeCanceled}; !slices.Equal(outcomes, want) {
		// A flake seen once (a "timeout" second, in a busy CI run): the
		// records' errors and latencies say which way the call ended.
		t.Errorf("sleep outcomes %v; want %v\n%s", outcomes, want, strings.Join(detail, "\n"))
	}
}

// post sends one raw JSON-RPC body to /mcp with bob's token and returns
// the status and body.
func post(t *testing.T, url, session, body string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer bob-token-0123456789ab")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), resp.Header
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestBadRequests: malformed JSON-RPC, unknown methods and sessions that
// do not exist get clear errors, and the gateway keeps serving.
func TestBadRequests(t *testing.T) {
	f := start(t, testConfig)
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	url := srv.URL + "/mcp"

	if code, body, _ := post(t, url, "", `{"jsonrpc":"2.0","id":1,"method":`); code != http.StatusBadRequest {
		t.Errorf("malformed JSON: %d %s; want 400", code, body)
	}
	if code, body, _ := post(t, url, "no-such-session", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != http.StatusNotFound {
		t.Errorf("unknown session: %d %s; want 404", code, body)
	}
	code, body, hdr := post(t, url, "", initialize)
	sid := hdr.Get("Mcp-Session-Id")
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s (session %q)", code, body, sid)
	}
	post(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if code, body, _ := post(t, url, sid, `{"jsonrpc":"2.0","id":3,"method":"no/such/method"}`); code != http.StatusBadRequest || !strings.Contains(body, `"no/such/method" unsupported`) {
		t.Errorf("unknown method: %d %s; want 400 naming the method", code, body)
	}
	if _, body, _ := post(t, url, sid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fx__crash","arguments":{}}}`); !strings.Contains(body, "unknown tool") {
		t.Errorf("a tool outside the profile: %s; want unknown tool", body)
	}
	// Still serving.
	if _, body, _ := post(t, url, sid, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"still here"}}}`); !strings.Contains(body, "still here") {
		t.Errorf("after bad requests: %s", body)
	}
}

// TestAbandonedSessions: 10,000 sessions opened and never closed are freed
// by session_timeout: their goroutines are gone and asking for one is 404.
func TestAbandonedSessions(t *testing.T) {
	f := start(t, strings.Replace(testConfig, "[serve.clients.alice]", "[serve]\nsession_timeout = \"1s\"\nmax_sessions = 20000\n\n[serve.clients.alice]", 1))
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	url := srv.URL + "/mcp"
	http.DefaultClient.CloseIdleConnections()
	before := runtime.NumGoroutine()
	const n = 10000
	var sids []string
	for i := range n {
		code, body, hdr := post(t, url, "", initialize)
		if code != http.StatusOK {
			t.Fatalf("initialize %d: %d %s", i, code, body)
		}
		sids = append(sids, hdr.Get("Mcp-Session-Id"))
	}
	// The sessions' goroutines end with them.
	eventually(t, "the sessions' goroutines to end", func() bool {
		http.DefaultClient.CloseIdleConnections()
		return runtime.NumGoroutine() <= before+10
	})
	// Asking for an abandoned session again is 404. (A probe is a request
	// that keeps a live session alive, so probes are further apart than
	// the timeout.)
	for i, sid := range []string{sids[0], sids[n/2], sids[n-1]} {
		testutil.Eventually(t, waitTimeout, func() bool {
			time.Sleep(1500 * time.Millisecond) // the probes' spacing, longer than the session timeout
			code, _, _ := post(t, url, sid, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
			return code == http.StatusNotFound
		}, fmt.Sprintf("session %d is still served", i))
	}
}
