package gateway_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
)

// idemGatewayConfig makes fx__echo and fx__add idempotent.
const idemGatewayConfig = testConfig + `
[tools.fx__echo]
idempotent = true

[tools.fx__add]
idempotent = true
`

// callCounter counts the tools/call the fixture served, not counting its
// own stats calls.
type callCounter struct {
	h     *host.Host
	stats int
}

func (c *callCounter) calls(t *testing.T) int {
	t.Helper()
	res, err := c.h.CallTool(context.Background(), "fx__stats", nil)
	if err != nil || res.IsError {
		t.Fatalf("stats: %v %+v", err, res)
	}
	c.stats++
	b, _ := json.Marshal(res.StructuredContent)
	var st struct{ Calls int }
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st.Calls - c.stats
}

// TestRESTInvokeIdempotencyKey: POST /api/v1/mcp/invoke twice with one
// idempotency_key calls the backend once; the second answer is the
// first's result, marked as a replay, with attempts 0; other params are
// 409; a key another client uses is its own; a bad key is 400.
func TestRESTInvokeIdempotencyKey(t *testing.T) {
	f := start(t, idemGatewayConfig)
	fx := &callCounter{h: f.h}
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	const bob = "bob-token-0123456789ab"
	c := &apiClient{t: t, base: srv.URL, spec: loadOpenAPI(t, srv.URL, bob), seen: map[string]bool{}}
	const invoke = "/api/v1/mcp/invoke"
	body := func(params, key string) string {
		k, _ := json.Marshal(key)
		return `{"name":"fx__add","params":` + params + `,"idempotency_key":` + string(k) + `}`
	}
	key := "'; DROP TABLE idempotency; --"
	first := c.do(apiCall{"first", bob, "POST", invoke, invoke, body(`{"a":2,"b":3}`, key), 200})
	second := c.do(apiCall{"again", bob, "POST", invoke, invoke, body(`{"b":3,"a":2}`, key), 200})
	if first["attempts"] != 1.0 || second["attempts"] != 0.0 {
		t.Fatalf("attempts: first %v, again %v", first["attempts"], second["attempts"])
	}
	r1, _ := first["result"].(map[string]any)
	r2, _ := second["result"].(map[string]any)
	if sc1, sc2 := r1["structuredContent"], r2["structuredContent"]; sc1 == nil || !jsonEqual(sc1, sc2) {
		t.Fatalf("replayed result differs: %v vs %v", r1, r2)
	}
	if m, _ := r2["_meta"].(map[string]any); m[host.MetaIdempotentReplay] != true {
		t.Fatalf("replay not marked: %v", r2)
	}
	if m, _ := r1["_meta"].(map[string]any); m[host.MetaIdempotentReplay] != nil {
		t.Fatalf("first marked as a replay: %v", r1)
	}
	if n := fx.calls(t); n != 1 {
		t.Fatalf("backend calls %d, want 1", n)
	}
	if m := c.do(apiCall{"other params", bob, "POST", invoke, invoke, body(`{"a":2,"b":4}`, key), 409}); errKind(m) != host.KindIdempotencyConflict {
		t.Fatalf("other params: %v", m)
	}
	// Alice (another client) has the same key as her own.
	c.do(apiCall{"alice's own key", "alice-token-0123456789", "POST", invoke, invoke, body(`{"a":2,"b":4}`, key), 200})
	for _, bad := range []string{strings.Repeat("x", host.MaxIdempotencyKey+1), "bell\a", "tab\tkey"} {
		if m := c.do(apiCall{"bad key", bob, "POST", invoke, invoke, body(`{"a":1,"b":1}`, bad), 400}); errKind(m) != host.KindBadRequest ||
			!strings.Contains(m["error"].(map[string]any)["message"].(string), "idempotency_key") {
			t.Fatalf("bad key %q: %v", bad, m)
		}
	}
	if n := fx.calls(t); n != 2 {
		t.Fatalf("backend calls %d, want 2", n)
	}
}

// TestMCPIdempotencyKeyMeta: over MCP (a go-sdk client on Streamable
// HTTP), _meta["io.toolhost/idempotency-key"] on tools/call replays the
// first result; other arguments are an isError result of kind
// idempotency_conflict; a key that is not a string is invalid_arguments.
func TestMCPIdempotencyKeyMeta(t *testing.T) {
	f := start(t, idemGatewayConfig)
	fx := &callCounter{h: f.h}
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cs, err := connectHTTP(ctx, srv.URL+"/mcp", "bob-token-0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(text string, key any) *mcp.CallToolResult {
		t.Helper()
		p := &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": text}, Meta: mcp.Meta{host.MetaIdempotencyKey: key}}
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first, again := call("hello", "k-1"), call("hello", "k-1")
	if first.IsError || again.IsError || text(again) != "hello" || again.Meta[host.MetaIdempotentReplay] != true || first.Meta[host.MetaIdempotentReplay] != nil {
		t.Fatalf("first %+v, again %+v", first, again)
	}
	if n := fx.calls(t); n != 1 {
		t.Fatalf("backend calls %d, want 1", n)
	}
	if res := call("other", "k-1"); !res.IsError || host.ResultKind(res) != host.KindIdempotencyConflict {
		t.Fatalf("other arguments: %+v", res)
	}
	if res := call("hello", 42); !res.IsError || host.ResultKind(res) != host.KindInvalidArguments {
		t.Fatalf("a number as key: %+v", res)
	}
	if res := call("hello", "bad\x00key"); !res.IsError || host.ResultKind(res) != host.KindInvalidArguments {
		t.Fatalf("a control character in the key: %+v", res)
	}
	if n := fx.calls(t); n != 1 {
		t.Fatalf("backend calls %d, want 1", n)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
