package transport_test

//lint:file-ignore SA1019 logging is deprecated as of protocol 2026-07-28 (SEP-2577) but servers still use it

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/transport"
)

// TestWithLog: a call made with WithLog gets the server's log messages at
// its level and above, every one of them before CallTool returns (stdio
// relays them as it reads them, ahead of the result), in the order sent;
// a call without it gets none, and a later call asking for a higher level
// than the session's gets only its own.
func TestWithLog(t *testing.T) {
	tr := clientFixture(t, hclog.NewNullLogger(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var got []string
	sink := func(p *mcp.LoggingMessageParams) {
		mu.Lock()
		defer mu.Unlock()
		d, _ := p.Data.(string)
		got = append(got, string(p.Level)+":"+d[:min(len(d), 10)])
	}
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := got
		got = nil
		return out
	}

	callText(t, transport.WithLog(ctx, "warning", sink), tr, "log", map[string]any{})
	want := "warning:message at|error:message at|critical:message at|alert:message at|emergency:message at|error:forged\n[ER"
	if g := strings.Join(take(), "|"); g != want {
		t.Errorf("warning: relayed\n%q\nwant\n%q", g, want)
	}
	callText(t, ctx, tr, "log", map[string]any{})
	if g := take(); len(g) != 0 {
		t.Errorf("a call without WithLog got %q", g)
	}
	callText(t, transport.WithLog(ctx, "alert", sink), tr, "log", map[string]any{})
	if g := strings.Join(take(), "|"); g != "alert:message at|emergency:message at" {
		t.Errorf("alert: relayed %q", g)
	}
}

// TestElicitSchemaCheckedBySpec: a requested schema that the go-sdk client
// refuses although MCP allows it (a titled multi-select whose items carry
// "type": "string") reaches the handler, and the answer is still checked
// against it; a schema with a nested object never reaches the handler.
func TestElicitSchemaCheckedBySpec(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var answer map[string]any
	asked := 0
	tr := clientFixture(t, hclog.NewNullLogger(), &transport.ClientOptions{
		Elicit: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked++
			return &mcp.ElicitResult{Action: "accept", Content: answer}, nil
		},
	})
	titledMulti := map[string]any{"type": "object", "properties": map[string]any{
		"colors": map[string]any{"type": "array", "items": map[string]any{"type": "string", "anyOf": []any{
			map[string]any{"const": "red", "title": "Red"}, map[string]any{"const": "blue", "title": "Blue"}}}},
	}}
	mu.Lock()
	answer = map[string]any{"colors": []any{"green"}}
	mu.Unlock()
	got := callText(t, ctx, tr, "elicit_schema", map[string]any{"schema": titledMulti})
	if asked != 1 || !strings.Contains(got, "does not match requested schema") {
		t.Errorf("an answer outside the schema: asked %d times, tool said %q", asked, got)
	}
	mu.Lock()
	answer = map[string]any{"colors": []any{"red"}}
	mu.Unlock()
	got = callText(t, ctx, tr, "elicit_schema", map[string]any{"schema": titledMulti})
	if asked != 2 || strings.Contains(got, "does not match requested schema") {
		t.Errorf("an answer in the schema: asked %d times, tool said %q", asked, got)
	}
	nested := map[string]any{"type": "object", "properties": map[string]any{
		"who": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
	}}
	got = callText(t, ctx, tr, "elicit_schema", map[string]any{"schema": nested})
	if asked != 2 || !strings.HasPrefix(got, "error:") {
		t.Errorf("a nested schema: asked %d times, tool said %q", asked, got)
	}
}
