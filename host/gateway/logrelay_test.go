package gateway_test

//lint:file-ignore SA1019 logging is deprecated as of protocol 2026-07-28 (SEP-2577) but clients and servers still use it

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// unpinned is a backend that would negotiate the go-sdk's latest protocol
// (2026-07-28) if offered it, and asks its client for logs, elicitation
// and sampling the pre-2026 way.
const unpinned = `
[servers.ask]
command = "@FIXTURE@"
args    = ["-client"]
startup_timeout = "5m"
`

// TestLogRelayedAtClientLevel: the upstream server's log messages during a
// call reach the client that made it, at the level that client set with
// logging/setLevel and above, and not below.
func TestLogRelayedAtClientLevel(t *testing.T) {
	f := start(t, unpinned)
	logs := make(chan *mcp.LoggingMessageParams, 100)
	client := mcp.NewClient(&mcp.Implementation{Name: "t"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { logs <- req.Params },
	})
	cs := memSession(t, f, client, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "error"}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask__log", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("ask__log: %v %+v", err, res)
	}
	var got []string
	for len(got) < 5 {
		select {
		case p := <-logs:
			d, _ := p.Data.(string)
			got = append(got, string(p.Level)+":"+d[:min(len(d), 10)])
		case <-ctx.Done():
			t.Fatalf("log messages relayed: %q", got)
		}
	}
	want := "error:message at|critical:message at|alert:message at|emergency:message at|error:forged\n[ER"
	if g := strings.Join(got, "|"); g != want {
		t.Errorf("relayed\n%q\nwant\n%q", g, want)
	}
}

// TestElicitationAndSamplingFromUnpinnedServer: a server that would speak
// 2026-07-28 and asks for elicitation and sampling during a call the
// pre-2026 way is offered 2025-11-25 by a host that relays them, so the
// gateway's client gets the requests and the server its answers.
func TestElicitationAndSamplingFromUnpinnedServer(t *testing.T) {
	f := start(t, unpinned)
	client := mcp.NewClient(&mcp.Implementation{Name: "t"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
		},
	})
	cs := memSession(t, f, client, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"ask__elicit", map[string]any{}, `action=accept content={"name":"Ada"}`},
		{"ask__sample", map[string]any{"prompt": "hi"}, "model=m text=sampled"},
	} {
		tool, want := tc.tool, tc.want
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: tc.args})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; res.IsError || got != want {
			t.Errorf("%s: %q (isError %v), want %q", tool, got, res.IsError, want)
		}
	}
}
