package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProgressRelayed: a client's progressToken goes upstream with the
// call, and the backend's notifications/progress come back to the client
// under that token, in order, before the result.
func TestProgressRelayed(t *testing.T) {
	f := start(t, testConfig)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	got := make(chan *mcp.ProgressNotificationParams, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "progress-client"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { got <- req.Params },
	})
	cs := memSession(t, f, client, nil)

	params := &mcp.CallToolParams{Name: "fx__progress", Arguments: map[string]any{"steps": 3, "acked": true}}
	params.SetProgressToken("client-token")
	result := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			t.Error(err)
		}
		result <- res
	}()
	for i := 1; i <= 3; i++ {
		select {
		case p := <-got:
			if p.ProgressToken != "client-token" || p.Progress != float64(i) || p.Total != 3 || p.Message != "step "+string(rune('0'+i)) {
				t.Errorf("report %d = %+v", i, p)
			}
		case <-ctx.Done():
			t.Fatalf("report %d never came", i)
		}
		// Let the fixture go on to its next step.
		if _, err := f.h.CallTool(ctx, "fx__progress_ack", map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	res := <-result
	if res == nil || res.IsError || !strings.HasPrefix(text(res), "done; token ") {
		t.Errorf("result %+v", res)
	}
}
