package transport

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress is one progress report of a call in flight (MCP 2025-11-25,
// basic/utilities/progress): Progress so far, Total when known (0: not
// known), and an optional Message, all as the server sent them.
type Progress struct {
	Progress float64
	Total    float64
	Message  string
}

type progressKey struct{}

// WithProgress returns a context that asks for progress: a tools/call made
// with it over an MCP transport carries a _meta.progressToken, and f is
// called for each notifications/progress the server sends for that call
// while the call is in flight (never after it returns). Over stdio and
// Streamable HTTP every report the server sends before the result reaches
// f before CallTool returns: they are relayed as the transport reads them
// (tapProgress). f runs on the connection's goroutine: it must be quick and
// must not block. A server may send no progress at all; a Wasm plugin never
// does.
func WithProgress(ctx context.Context, f func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

func progressFrom(ctx context.Context) func(Progress) {
	f, _ := ctx.Value(progressKey{}).(func(Progress))
	return f
}

// progressRouter delivers a client's progress notifications to the calls
// that asked for them, by token. Notifications with a token no call holds
// (late, or forged) are dropped.
type progressRouter struct {
	mu    sync.Mutex
	next  uint64
	calls map[string]*progressCall
	// tapped: reports are delivered as the transport reads them
	// (tapProgress), not by the go-sdk's handler, which may run after
	// the call has returned.
	tapped bool
}

type progressCall struct {
	mu   sync.Mutex // held while f runs; done waits for it
	f    func(Progress)
	done bool
}

// register gives f a fresh token; done forgets it, and once done has
// returned f is not called again.
func (r *progressRouter) register(f func(Progress)) (token string, done func()) {
	c := &progressCall{f: f}
	r.mu.Lock()
	r.next++
	token = fmt.Sprintf("toolhost-%d", r.next)
	if r.calls == nil {
		r.calls = map[string]*progressCall{}
	}
	r.calls[token] = c
	r.mu.Unlock()
	return token, func() {
		r.mu.Lock()
		delete(r.calls, token)
		r.mu.Unlock()
		c.mu.Lock()
		c.done = true
		c.mu.Unlock()
	}
}

func (r *progressRouter) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if r == nil || r.tapped || req == nil {
		return
	}
	r.deliver(req.Params)
}

// deliver calls the f of the call whose token p carries, if it is in
// flight.
func (r *progressRouter) deliver(p *mcp.ProgressNotificationParams) {
	if r == nil || p == nil {
		return
	}
	token, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	r.mu.Lock()
	c := r.calls[token]
	r.mu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		c.f(Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
	}
}

// waiting reports whether any call waits for progress.
func (r *progressRouter) waiting() bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls) > 0
}

// withToken returns a copy of p that asks for progress with token (p's own
// _meta is not modified).
func withToken(p *mcp.CallToolParams, token string) *mcp.CallToolParams {
	cp := *p
	cp.Meta = maps.Clone(p.Meta)
	cp.SetProgressToken(token)
	return &cp
}
