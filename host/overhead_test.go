package host

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/transport"
)

// fakeBackend answers every tool call at once with the same text result, so
// that a benchmark through it measures the host's own work only.
type fakeBackend struct{ res *mcp.CallToolResult }

func (f *fakeBackend) Connect(context.Context) (*mcp.InitializeResult, error) { return nil, nil }
func (f *fakeBackend) ListTools(context.Context) ([]*mcp.Tool, error)         { return nil, nil }
func (f *fakeBackend) CallTool(context.Context, *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	return f.res, nil
}
func (f *fakeBackend) ListResources(context.Context) ([]*mcp.Resource, error) { return nil, nil }
func (f *fakeBackend) ReadResource(context.Context, *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return nil, transport.ErrUnsupported
}
func (f *fakeBackend) ListPrompts(context.Context) ([]*mcp.Prompt, error) { return nil, nil }
func (f *fakeBackend) GetPrompt(context.Context, *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return nil, transport.ErrUnsupported
}
func (f *fakeBackend) Ping(context.Context) error { return nil }
func (f *fakeBackend) Close() error               { return nil }

// sizedFake is a fakeBackend that knows its result's size, as a plugin does.
type sizedFake struct {
	fakeBackend
	size int
}

func (f *sizedFake) CallToolSized(context.Context, *mcp.CallToolParams) (*mcp.CallToolResult, int, error) {
	return f.res, f.size, nil
}

// BenchmarkHostOverhead is BenchmarkPolicyOverhead (bench_test.go) without
// the backend: the same policy, inputSchema and audit log, the same
// arguments, but a backend that answers in no time, as a plugin (its result
// size known, its deadline set by the sandbox) and as a server. It measures
// the host's own cost per call with much less noise than a real backend
// allows; on minus off is what policy, validation and audit add.
func BenchmarkHostOverhead(b *testing.B) {
	ctx := context.Background()
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}
	enc, _ := json.Marshal(res)
	tool := &mcp.Tool{Name: "echo", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []any{"text"},
	}}
	const policy = `
[policy]
allow = ["t__*", "other__read_*"]
deny  = ["*__delete_*", "t__crash", "t__sleep"]
`
	args := map[string]any{"text": "hello"}
	for _, kind := range []string{KindPlugin, KindStdio} {
		for _, on := range []bool{false, true} {
			name := "kind=" + map[string]string{KindPlugin: "plugin", KindStdio: "server"}[kind] + map[bool]string{false: "/checks=off", true: "/checks=on"}[on]
			b.Run(name, func(b *testing.B) {
				src := ""
				if on {
					src = "[host]\naudit_log = \"" + filepath.Join(b.TempDir(), "audit.jsonl") + "\"\n" + policy
				}
				cfg, err := config.Parse([]byte(src), nil)
				if err != nil {
					b.Fatal(err)
				}
				h, err := New(ctx, cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer h.Close()
				var tr transport.Transport = &fakeBackend{res: res}
				if kind == KindPlugin {
					tr = &sizedFake{fakeBackend{res: res}, len(enc)}
				}
				never := 0
				be := h.newBackend("t", kind, "t__", 30*time.Second, config.Supervision{
					HealthCheck: config.HealthNone, HealthThreshold: 3, MaxRestarts: &never,
					CircuitBreaker: config.Circuit{Failures: 5, Cooldown: config.Duration(time.Minute), Successes: 3}})
				be.tr, be.state, be.tools, be.known = tr, StateReady, []*mcp.Tool{tool}, true
				if kind != KindPlugin {
					be.maxOutput = DefaultMaxOutput
				}
				h.add(be)
				if err := h.rebuild(true); err != nil {
					b.Fatal(err)
				}
				h.noValidate = !on
				for b.Loop() {
					res, err := h.CallTool(ctx, "t__echo", args)
					if err != nil || res.IsError {
						b.Fatal(err, res)
					}
				}
			})
		}
	}
}
