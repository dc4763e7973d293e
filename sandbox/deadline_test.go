package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCallerDeadlineIsTheCalls: a caller that gives a call a deadline (the
// host gives every call one) owns it: the plugin enforces that deadline and
// sets no second one of its own timeout. Without one, the plugin's timeout
// applies (TestPluginDeadline in host, and the runaway tests, cover that).
func TestCallerDeadlineIsTheCalls(t *testing.T) {
	e := newTestEngine(t)
	p := connect(t, e, "echo", Manifest{Timeout: time.Millisecond}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := p.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"text": "50ms"}})
	if err != nil || res.IsError {
		t.Fatalf("a 50ms call within the caller's 5m deadline, plugin timeout 1ms: %v %v", res, err)
	}
}
