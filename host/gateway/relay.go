package gateway

//lint:file-ignore SA1019 logging, sampling and roots are deprecated as of protocol 2026-07-28 (SEP-2577) but clients and servers still use them

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
)

// ErrNoClient: an upstream server asked for elicitation or sampling, and
// the gateway cannot relay it: the request is not tied to a call of one of
// its clients (host.ElicitationRequest.Call is nil: several calls to that
// backend were in flight), or that client did not declare the capability
// (MCP 2025-11-25 client/elicitation, client/sampling), or its session
// cannot carry server-to-client requests ([serve] stateless).
var ErrNoClient = errors.New("gateway: no client to relay the request to")

// Relay makes opts the options of a Host that a Gateway will serve; call it
// before host.New, and pass m to New as Options.Metrics too. It sets
// opts.Elicit, opts.Sample and opts.ListRoots to the gateway's relays
// (Elicit, Sample and Roots: a server's request during a call goes to the
// gateway client that made the call), replacing any set; and when m is not
// nil it makes opts.Audit count every record in m (Metrics.Record), after
// the Audit already set, if any. opts must not be nil.
//
// toolhost serve builds its Host this way.
func Relay(opts *host.Options, m *Metrics) {
	opts.Elicit, opts.Sample, opts.ListRoots = Elicit, Sample, Roots
	if m == nil {
		return
	}
	if prev := opts.Audit; prev != nil {
		opts.Audit = func(r host.AuditRecord) {
			prev(r)
			m.Record(r)
		}
	} else {
		opts.Audit = m.Record
	}
}

type sessionKey struct{}

// withSession returns ctx carrying the session of the client whose call it
// is; Elicit and Sample find it there.
func withSession(ctx context.Context, ss *mcp.ServerSession) context.Context {
	return context.WithValue(ctx, sessionKey{}, ss)
}

// Elicit relays an upstream server's elicitation/create to the gateway
// client that made the call it belongs to, and returns that client's
// answer. Set it as host.Options.Elicit on the Host a Gateway serves.
// The host's own approvals of grant = "ask" tools (req.Approval) go the
// same way. Errors wrap ErrNoClient (see there) or are the client's.
func Elicit(ctx context.Context, req *host.ElicitationRequest) (*mcp.ElicitResult, error) {
	backend := req.Backend
	if req.Approval {
		// The host asks (grant = "ask"), not a backend.
		backend = "(toolhost's approval)"
	}
	if p, creq := askIn(ctx), requestIn(ctx); p != nil && req.Call != nil && creq != nil {
		if !declares(creq, "elicitation") {
			return nil, fmt.Errorf("%w: backend %s asked for elicitation during %s, but the client that made the call did not declare the elicitation capability", ErrNoClient, backend, req.Call.Tool)
		}
		r, err := p.ask(ctx, req.Params)
		if err != nil {
			return nil, err
		}
		er, ok := r.(*mcp.ElicitResult)
		if !ok {
			return nil, fmt.Errorf("gateway: the client answered elicitation with %T", r)
		}
		return er, nil
	}
	ss, err := relayTarget(ctx, backend, req.Call, "elicitation", func(c *mcp.ClientCapabilities) bool { return c.Elicitation != nil })
	if err != nil {
		return nil, err
	}
	return ss.Elicit(ctx, req.Params)
}

// Sample relays an upstream server's sampling/createMessage to the gateway
// client that made the call it belongs to (its LLM answers). Set it as
// host.Options.Sample. Errors as Elicit's.
func Sample(ctx context.Context, req *host.SamplingRequest) (*mcp.CreateMessageResult, error) {
	if p, creq := askIn(ctx), requestIn(ctx); p != nil && req.Call != nil && creq != nil {
		if !declares(creq, "sampling") {
			return nil, fmt.Errorf("%w: backend %s asked for sampling during %s, but the client that made the call did not declare the sampling capability", ErrNoClient, req.Backend, req.Call.Tool)
		}
		r, err := p.ask(ctx, req.Params)
		if err != nil {
			return nil, err
		}
		wr, ok := r.(*mcp.CreateMessageWithToolsResult)
		if !ok || len(wr.Content) != 1 {
			return nil, fmt.Errorf("gateway: the client answered sampling with %T (want one content block)", r)
		}
		return &mcp.CreateMessageResult{Meta: wr.Meta, Content: wr.Content[0], Model: wr.Model, Role: wr.Role, StopReason: wr.StopReason}, nil
	}
	ss, err := relayTarget(ctx, req.Backend, req.Call, "sampling", func(c *mcp.ClientCapabilities) bool { return c.Sampling != nil })
	if err != nil {
		return nil, err
	}
	return ss.CreateMessage(ctx, req.Params)
}

// Roots answers an upstream server's roots/list during a call with the
// roots of the gateway client that made the call, when that client
// declared the roots capability (MCP 2025-11-25 client/roots); otherwise
// (no client to tie it to, or one without roots) ok is false and the host
// answers the configured roots. Set it as host.Options.ListRoots. Errors
// are the client's.
func Roots(ctx context.Context, req *host.RootsRequest) ([]*mcp.Root, bool, error) {
	if p, creq := askIn(ctx), requestIn(ctx); p != nil && req.Call != nil && creq != nil {
		if !declares(creq, "roots") {
			return nil, false, nil
		}
		r, err := p.ask(ctx, &mcp.ListRootsParams{})
		if err != nil {
			return nil, false, err
		}
		lr, ok := r.(*mcp.ListRootsResult)
		if !ok {
			return nil, false, fmt.Errorf("gateway: the client answered roots/list with %T", r)
		}
		return lr.Roots, true, nil
	}
	ss, err := relayTarget(ctx, req.Backend, req.Call, "roots", func(c *mcp.ClientCapabilities) bool { return c.RootsV2 != nil || c.Roots.ListChanged })
	if err != nil {
		return nil, false, nil
	}
	if st := fastStreamIn(ctx); st != nil {
		// A call the HTTP fast path serves: on its stream (fasthttp.go).
		raw, err := st.ask(ctx, "roots/list", struct{}{})
		if err != nil {
			return nil, false, err
		}
		var res mcp.ListRootsResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, false, fmt.Errorf("gateway: the client's roots/list result: %w", err)
		}
		return res.Roots, true, nil
	}
	res, err := ss.ListRoots(ctx, nil)
	if err != nil {
		return nil, false, err
	}
	return res.Roots, true, nil
}

func relayTarget(ctx context.Context, backend string, call *host.CallInfo, what string, declared func(*mcp.ClientCapabilities) bool) (*mcp.ServerSession, error) {
	ss, _ := ctx.Value(sessionKey{}).(*mcp.ServerSession)
	if call == nil || ss == nil {
		return nil, fmt.Errorf("%w: backend %s asked for %s outside a call the gateway can tie it to (several calls to it in flight)", ErrNoClient, backend, what)
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || !declared(ip.Capabilities) {
		return nil, fmt.Errorf("%w: backend %s asked for %s during %s, but the client that made the call did not declare the %s capability", ErrNoClient, backend, what, call.Tool, what)
	}
	return ss, nil
}
