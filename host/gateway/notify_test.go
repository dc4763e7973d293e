package gateway_test

//lint:file-ignore SA1019 logging is deprecated as of protocol 2026-07-28 (SEP-2577) but clients and servers still use it

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sseMessages returns the JSON-RPC messages of an SSE body (the data of
// its events), in the order the gateway wrote them.
func sseMessages(t *testing.T, body string) []map[string]any {
	t.Helper()
	var msgs []map[string]any
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("SSE data %q: %v", data, err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// TestLogsPrecedeResult: every notifications/message a backend sends
// during a call reaches the calling client on that call's own response
// stream, before the call's result, on every call (issue 20 item 3: the
// conformance scenario tools-call-with-logging through the gateway lost
// messages). The client reads the raw SSE stream of each POST, so the
// order checked is the order on the wire; the backends are a stdio server
// (the fixture) and a go-sdk server over Streamable HTTP on loopback,
// which sends its messages back to back with no pause before its result.
func TestLogsPrecedeResult(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "up"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}})
	const burst = 5
	mcp.AddTool(up, &mcp.Tool{Name: "burst", Description: "five log messages, then the result"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			for i := range burst {
				if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprintf("m%d", i)}); err != nil {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(upSrv.Close) // after the host's Close
	f := start(t, unpinned+"\n[servers.up]\nurl = \""+upSrv.URL+"\"\n")
	url := serveLoopback(t, f)

	code, body, hdr := post(t, url, "", initialize)
	sid := hdr.Get("Mcp-Session-Id")
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", code, body)
	}
	post(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if code, body, _ := post(t, url, sid, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`); code != http.StatusOK {
		t.Fatalf("logging/setLevel: %d %s", code, body)
	}
	for _, tc := range []struct {
		tool string
		want int // log messages per call
	}{
		{"ask__log", 9},
		{"up__burst", burst},
	} {
		for i := range 40 {
			id := 100 + i
			_, body, _ := post(t, url, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tc.tool))
			msgs := sseMessages(t, body)
			logs, result := 0, -1
			for j, m := range msgs {
				switch {
				case m["method"] == "notifications/message":
					if result >= 0 {
						t.Fatalf("%s call %d: a log message after the result: %s", tc.tool, i, body)
					}
					logs++
				case m["id"] == float64(id):
					result = j
				}
			}
			if result < 0 || logs != tc.want {
				t.Fatalf("%s call %d: %d log messages before the result (want %d), result at %d:\n%s", tc.tool, i, logs, tc.want, result, body)
			}
		}
	}
}
