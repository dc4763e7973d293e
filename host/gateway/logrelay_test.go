package gateway_test

//lint:file-ignore SA1019 logging is deprecated as of protocol 2026-07-28 (SEP-2577) but clients and servers still use it

import (
	"context"
	"path/filepath"
	"strconv"
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

// TestRootsRelayed: an upstream server's roots/list during a call is
// answered with the roots of the client that made the call when it
// declared the roots capability, and with the server's configured roots
// when it did not.
func TestRootsRelayed(t *testing.T) {
	dir := t.TempDir()
	f := start(t, unpinned+"roots = ["+strconv.Quote("file://"+dir)+"]\n")
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	withRoots := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil)
	withRoots.AddRoots(&mcp.Root{URI: "file:///client/project", Name: "project"})
	cs := memSession(t, f, withRoots, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask__roots", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; res.IsError || got != "file:///client/project" {
		t.Errorf("roots of a client with roots: %q (isError %v)", got, res.IsError)
	}

	without := mcp.NewClient(&mcp.Implementation{Name: "t"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs2 := memSession(t, f, without, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	res, err = cs2.CallTool(ctx, &mcp.CallToolParams{Name: "ask__roots", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; res.IsError || !strings.HasPrefix(got, "file://") || !strings.HasSuffix(got, filepath.Base(dir)) {
		t.Errorf("roots of a client without roots: %q, want the configured %s", got, dir)
	}
}
