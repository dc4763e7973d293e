package ociplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/ociplugin/ociref"
	"github.com/toolhost/toolhost/transport"
)

// Transport is a plugin backend whose module comes from a registry: its
// Connect pulls the reference (Pull, bounded by Connect's context), then
// builds the plugin's own Transport from the cached module with Build and
// connects it; the other methods are the built Transport's. The host makes
// a new Transport per start, so every start (and restart) resolves the
// reference again: a moved tag is picked up by the next start.
//
// Connect's errors: a pull error (ErrPull, ErrDigest, ErrCache) wraps
// transport.ErrStart, and the host restarts the backend with backoff; an
// artifact that cannot become a plugin as configured (ErrPinned,
// ErrMediaType, ErrTooLarge, ociref.ErrRef) is also a
// *transport.PermanentError, and the backend is marked failed at once.
type Transport struct {
	// Ref and Pin are Pull's; Options its options (nil: defaults).
	Ref, Pin string
	Options  *Options
	// Build makes the plugin's Transport from the module file and its
	// digest ("sha256:HEX"). Required.
	Build func(path, digest string) transport.Transport
	// Resolved, if set, is called with each successful resolution before
	// the plugin is built (for status: Result.Status).
	Resolved func(*Result)

	mu     sync.Mutex
	inner  transport.Transport
	closed bool
	cancel context.CancelFunc // of a Connect in progress
}

var (
	_ transport.Transport   = (*Transport)(nil)
	_ transport.SizedCaller = (*Transport)(nil)
)

// Connect pulls, builds and connects. See Transport.
func (t *Transport) Connect(ctx context.Context) (*mcp.InitializeResult, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, transport.ErrClosed
	}
	// Close cancels the pull; once the plugin is built, its own Close
	// ends its Connect.
	pctx, cancel := context.WithCancel(ctx)
	t.cancel = cancel
	t.mu.Unlock()
	res, err := Pull(pctx, t.Ref, t.Pin, t.Options)
	cancel()
	if err != nil {
		return nil, startError(err)
	}
	if t.Resolved != nil {
		t.Resolved(res)
	}
	tr := t.Build(res.Path, res.Digest)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		tr.Close()
		return nil, transport.ErrClosed
	}
	t.inner = tr
	t.mu.Unlock()
	return tr.Connect(ctx)
}

// startError maps a Pull error to the transport's start errors.
func startError(err error) error {
	var reason string
	switch {
	case errors.Is(err, ErrPinned):
		reason = "the OCI plugin does not match its sha256 pin"
	case errors.Is(err, ErrMediaType):
		reason = "the OCI artifact is not a wasm plugin"
	case errors.Is(err, ErrTooLarge):
		reason = "the OCI artifact is over its size limit"
	case errors.Is(err, ociref.ErrRef):
		reason = "the OCI reference is invalid"
	default:
		return fmt.Errorf("%w: %w", err, transport.ErrStart)
	}
	return &transport.PermanentError{Reason: reason, Err: fmt.Errorf("%w: %w", err, transport.ErrStart)}
}

func (t *Transport) get() (transport.Transport, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return nil, transport.ErrClosed
	case t.inner == nil:
		return nil, transport.ErrNotConnected
	}
	return t.inner, nil
}

// ListTools is the plugin's.
func (t *Transport) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	tr, err := t.get()
	if err != nil {
		return nil, err
	}
	return tr.ListTools(ctx)
}

// CallTool is the plugin's.
func (t *Transport) CallTool(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	tr, err := t.get()
	if err != nil {
		return nil, err
	}
	return tr.CallTool(ctx, params)
}

// CallToolSized is the plugin's (transport.SizedCaller), or CallTool and
// the size of the result's encoding when it has none.
func (t *Transport) CallToolSized(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, int, error) {
	tr, err := t.get()
	if err != nil {
		return nil, 0, err
	}
	if sc, ok := tr.(transport.SizedCaller); ok {
		return sc.CallToolSized(ctx, params)
	}
	res, err := tr.CallTool(ctx, params)
	if err != nil {
		return nil, 0, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, 0, err
	}
	return res, len(b), nil
}

// ListResources is the plugin's.
func (t *Transport) ListResources(ctx context.Context) ([]*mcp.Resource, error) {
	tr, err := t.get()
	if err != nil {
		return nil, err
	}
	return tr.ListResources(ctx)
}

// ReadResource is the plugin's.
func (t *Transport) ReadResource(ctx context.Context, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	tr, err := t.get()
	if err != nil {
		return nil, err
	}
	return tr.ReadResource(ctx, params)
}

// ListPrompts is the plugin's.
func (t *Transport) ListPrompts(ctx context.Context) ([]*mcp.Prompt, error) {
	tr, err := t.get()
	if err != nil {
		return nil, err
	}
	return tr.ListPrompts(ctx)
}

// GetPrompt is the plugin's.
func (t *Transport) GetPrompt(ctx context.Context, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	tr, err := t.get()
	if err != nil {
		return nil, err
	}
	return tr.GetPrompt(ctx, params)
}

// Ping is the plugin's.
func (t *Transport) Ping(ctx context.Context) error {
	tr, err := t.get()
	if err != nil {
		return err
	}
	return tr.Ping(ctx)
}

// Close cancels a Connect in progress and closes the plugin. Idempotent.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	if t.cancel != nil {
		t.cancel()
	}
	tr := t.inner
	t.mu.Unlock()
	if tr != nil {
		return tr.Close()
	}
	return nil
}
