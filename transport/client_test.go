package transport_test

//lint:file-ignore SA1019 logging, sampling and roots are deprecated as of protocol 2026-07-28 (SEP-2577) but servers still use them

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
)

// logSink collects a logger's records, decoded from hclog's JSON format.
type logSink chan map[string]any

func (s logSink) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimSpace(string(p)), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			s <- m
		}
	}
	return len(p), nil
}

func clientFixture(t *testing.T, logger hclog.Logger, f *transport.ClientOptions) *transport.Stdio {
	tr := transport.NewStdio(transport.Command{
		Path:       testutil.Fixture(t),
		Args:       []string{"-client", "-protocol", "2025-11-25"},
		InheritEnv: config.DefaultInheritEnv,
	}, &transport.StdioOptions{Logger: logger, TerminateGrace: 500 * time.Millisecond, Features: f})
	t.Cleanup(func() { tr.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := tr.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	return tr
}

func callText(t *testing.T, ctx context.Context, tr transport.Transport, name string, args any) string {
	t.Helper()
	res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("%s: %+v", name, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// TestServerLog: with Features.LogLevel "warning" the server is sent
// logging/setLevel, and its notifications/message reach the transport's
// logger at the matching hclog level (below warning: none), bounded and
// with control characters escaped.
func TestServerLog(t *testing.T) {
	sink := make(logSink, 1000)
	logger := hclog.New(&hclog.LoggerOptions{Output: sink, Level: hclog.Trace, JSONFormat: true})
	tr := clientFixture(t, logger, &transport.ClientOptions{LogLevel: "warning"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if got := callText(t, ctx, tr, "log", map[string]any{}); got != "logged" {
		t.Fatal(got)
	}
	want := map[string]string{"warning": "warn", "error": "error", "critical": "error", "alert": "error", "emergency": "error"}
	got := map[string]string{}
	var evil map[string]any
	for len(got) < len(want) || evil == nil {
		select {
		case m := <-sink:
			if m["@message"] != "server log" {
				continue
			}
			if m["logger"] == "evil" {
				evil = m
				continue
			}
			lvl, _ := m["level"].(string)
			if want[lvl] == "" {
				t.Errorf("a message at %q passed level warning: %v", lvl, m)
			}
			got[lvl] = m["@level"].(string)
			if m["data"] != "message at "+lvl {
				t.Errorf("data %v", m["data"])
			}
		case <-ctx.Done():
			t.Fatalf("log records seen: %v (evil: %v)", got, evil)
		}
	}
	for l, h := range want {
		if got[l] != h {
			t.Errorf("MCP level %s logged at %q, want %q", l, got[l], h)
		}
	}
	data := evil["data"].(string)
	if strings.ContainsAny(data, "\n\x1b") || !strings.HasPrefix(data, `forged\n[ERROR] line\u001b[31m`) {
		t.Errorf("control characters not escaped: %q", data[:40])
	}
	if len(data) > 4200 || !strings.HasSuffix(data, "…") {
		t.Errorf("data of %d bytes not bounded", len(data))
	}
}

type callTag struct{}

// TestClientFeatures: elicitation, sampling and roots reach the handlers,
// with the context of the tools/call they belong to, and the server gets
// their answers; without Features no capability is declared and the
// server's requests fail.
func TestClientFeatures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tagged := func(ctx context.Context) string {
		if !transport.CallContext(ctx) {
			return "no call"
		}
		s, _ := ctx.Value(callTag{}).(string)
		return s
	}
	var elicitCall, sampleCall string
	f := &transport.ClientOptions{
		Elicit: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicitCall = tagged(ctx)
			if req.Params.Message != "Who are you?" {
				t.Errorf("message %q", req.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "age": 36}}, nil
		},
		Sample: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sampleCall = tagged(ctx)
			in := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: strings.ToUpper(in)}}, nil
		},
		Roots: []*mcp.Root{{URI: "file:///work", Name: "work"}, {URI: "file:///data"}},
	}
	tr := clientFixture(t, hclog.NewNullLogger(), f)
	if got := callText(t, context.WithValue(ctx, callTag{}, "elicit-call"), tr, "elicit", map[string]any{}); got != `action=accept content={"age":36,"name":"Ada"}` {
		t.Errorf("elicit: %s", got)
	}
	if got := callText(t, context.WithValue(ctx, callTag{}, "sample-call"), tr, "sample", map[string]any{"prompt": "hi"}); got != "model=test-model text=HI" {
		t.Errorf("sample: %s", got)
	}
	if got := callText(t, ctx, tr, "roots", map[string]any{}); got != "file:///data,file:///work" {
		t.Errorf("roots: %s", got)
	}
	if elicitCall != "elicit-call" || sampleCall != "sample-call" {
		t.Errorf("handlers saw calls %q and %q", elicitCall, sampleCall)
	}

	// Without Features: nothing declared, elicitation and sampling
	// refused, no roots (the go-sdk answers roots/list with none).
	bare := clientFixture(t, hclog.NewNullLogger(), nil)
	if got := callText(t, ctx, bare, "roots", map[string]any{}); got != "" {
		t.Errorf("roots without Roots: %q", got)
	}
	for _, tool := range []string{"elicit", "sample"} {
		res, err := bare.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError {
			t.Errorf("%s without a handler: %+v", tool, res.Content[0])
		}
	}
}
