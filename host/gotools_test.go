package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/transport"
	"github.com/toolhost/toolhost/transport/transporttest"
)

// goTools is an embedder-supplied transport.Transport whose tools are Go
// functions, in the process: the shape of a backend an embedder plugs in
// with Host.Add. It keeps the Transport contract (ErrNotConnected before
// Connect, ErrClosed after Close, ctx ends a call promptly with
// ErrTimeout or context.Canceled), which TestGoToolsConformance checks.
type goTools struct {
	funcs map[string]goFunc

	mu        sync.Mutex
	connected bool
	closed    bool
}

// goFunc is one tool: it gets the call's arguments and returns the text of
// the result; an error becomes a result with IsError set.
type goFunc func(ctx context.Context, args map[string]any) (string, error)

func newGoTools(funcs map[string]goFunc) *goTools { return &goTools{funcs: funcs} }

var _ transport.Transport = (*goTools)(nil)

func (g *goTools) usable() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closed:
		return transport.ErrClosed
	case !g.connected:
		return transport.ErrNotConnected
	}
	return nil
}

func (g *goTools) Connect(ctx context.Context) (*mcp.InitializeResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, transport.ErrClosed
	}
	g.connected = true
	return &mcp.InitializeResult{
		ProtocolVersion: "2025-11-25",
		ServerInfo:      &mcp.Implementation{Name: "gotools", Version: "1.0.0"},
		Capabilities:    &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	}, nil
}

func (g *goTools) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	if err := g.usable(); err != nil {
		return nil, err
	}
	var out []*mcp.Tool
	for name := range g.funcs {
		out = append(out, &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (g *goTools) CallTool(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	if err := g.usable(); err != nil {
		return nil, err
	}
	f, ok := g.funcs[p.Name]
	if !ok {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no tool " + p.Name}}}, nil
	}
	var args map[string]any
	if p.Arguments != nil {
		raw, err := json.Marshal(p.Arguments)
		if err == nil {
			err = json.Unmarshal(raw, &args)
		}
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "arguments: " + err.Error()}}}, nil
		}
	}
	text, err := f(ctx, args)
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s: %w (%w)", p.Name, transport.ErrTimeout, ctx.Err())
		}
		return nil, fmt.Errorf("%s: %w", p.Name, ctx.Err())
	}
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
}

func (g *goTools) ListResources(ctx context.Context) ([]*mcp.Resource, error) {
	return nil, g.unsupported()
}

func (g *goTools) ReadResource(ctx context.Context, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return nil, g.unsupported()
}

func (g *goTools) ListPrompts(ctx context.Context) ([]*mcp.Prompt, error) {
	return nil, g.unsupported()
}

func (g *goTools) GetPrompt(ctx context.Context, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return nil, g.unsupported()
}

func (g *goTools) unsupported() error {
	if err := g.usable(); err != nil {
		return err
	}
	return transport.ErrUnsupported
}

func (g *goTools) Ping(ctx context.Context) error { return g.usable() }

func (g *goTools) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	return nil
}

// demoTools are the tools of the examples and tests: echo, and wait, which
// runs until its context ends.
func demoTools() map[string]goFunc {
	return map[string]goFunc{
		"echo": func(_ context.Context, args map[string]any) (string, error) {
			return fmt.Sprint(args["text"]), nil
		},
		"wait": func(ctx context.Context, _ map[string]any) (string, error) {
			t := time.NewTimer(time.Minute)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-t.C:
				return "waited", nil
			}
		},
	}
}

// TestGoToolsConformance: the embedder-supplied transport of the examples
// passes the conformance suite every Transport must pass.
func TestGoToolsConformance(t *testing.T) {
	transporttest.Run(t, transporttest.Backend{
		New:  func(*testing.T) transport.Transport { return newGoTools(demoTools()) },
		Echo: "echo",
		Slow: "wait",
	})
}
