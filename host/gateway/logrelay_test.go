package gateway_test

//lint:file-ignore SA1019 logging is deprecated as of protocol 2026-07-28 (SEP-2577) but clients and servers still use it

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testutil"
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

// TestInputRequestsFor2026Clients: a client of protocol 2026-07-28 cannot
// be sent requests during a call, so an upstream server's elicitation,
// sampling and roots requests reach it in the call's result (SEP-2322,
// input required) and its answers, sent with the retry, reach the server,
// whose call then completes; a retry with an unknown requestState is an
// error result.
func TestInputRequestsFor2026Clients(t *testing.T) {
	f := start(t, unpinned)
	client := mcp.NewClient(&mcp.Implementation{Name: "t"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///client/project"})
	cs := memSession(t, f, client, nil)
	if v := cs.InitializeResult().ProtocolVersion; v < "2026-07-28" {
		t.Fatalf("the client negotiated %s; the test needs 2026-07-28 or later", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"ask__elicit", map[string]any{}, `action=accept content={"name":"Ada"}`},
		{"ask__sample", map[string]any{"prompt": "hi"}, "model=m text=sampled"},
		{"ask__roots", map[string]any{}, "file:///client/project"},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; res.IsError || got != tc.want {
			t.Errorf("%s: %q (isError %v), want %q", tc.tool, got, res.IsError, tc.want)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask__elicit", Arguments: map[string]any{}, RequestState: "forged"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(got, "requestState") {
		t.Errorf("a forged requestState: %q (isError %v)", got, res.IsError)
	}
}

// TestInputRequestNeverAnswered: a 2026-07-28 client that gets an input
// request and never calls again does not hold the upstream call beyond
// its deadline: the call ends and its requestState expires.
func TestInputRequestNeverAnswered(t *testing.T) {
	f := start(t, unpinned+"timeout = \"1s\"\n")
	client := mcp.NewClient(&mcp.Implementation{Name: "t"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	cs := memSession(t, f, client, nil)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask__elicit", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("want an input-required result, got %+v", res)
	}
	testutil.Eventually(t, waitTimeout, func() bool {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask__elicit", Arguments: map[string]any{}, RequestState: res.RequestState})
		if err != nil {
			t.Fatal(err)
		}
		if r.IsError {
			// The call ended at its deadline: this retry got its
			// end, or found the requestState expired.
			if txt := r.Content[0].(*mcp.TextContent).Text; !strings.Contains(txt, "requestState") && !strings.Contains(txt, "timed out") {
				t.Errorf("the unanswered call ended with %q", txt)
			}
			return true
		}
		if !r.NeedsInput() {
			t.Fatalf("a retry without answers: %+v", r)
		}
		return false
	}, "the unanswered call never expired")
}
