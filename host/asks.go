package host

//lint:file-ignore SA1019 logging, sampling and roots are deprecated as of protocol 2026-07-28 (SEP-2577) but servers still use them

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/transport"
)

// Audit operations (AuditRecord.Op) of the requests MCP servers make of the
// host.
const (
	OpElicit = "elicitation/create"
	OpSample = "sampling/createMessage"
)

// Audit outcomes of an elicitation (the user's action, MCP 2025-11-25,
// client/elicitation) and of a failed elicitation or sampling request (the
// handler returned an error, or the answer was refused). A sampling request
// answered is OutcomeOK.
const (
	OutcomeAccept  = "accept"
	OutcomeDecline = "decline"
	OutcomeCancel  = "cancel"
	OutcomeError   = "error"
)

// CallInfo names the tool call a server's request was made for.
type CallInfo struct {
	Tool    string // catalogue name as called
	Profile string // "" for the Host's own view
	Client  string // as WithClient named it; "" otherwise
}

// ElicitationRequest is an MCP server's elicitation/create (MCP 2025-11-25,
// client/elicitation): it asks the user for input, in form mode a flat
// object of primitive fields described by Params.RequestedSchema.
type ElicitationRequest struct {
	// Backend is the [servers.NAME] that asks.
	Backend string
	// Call is the tool call the request belongs to; nil when it cannot be
	// told: the request arrived while no call, or several calls, to that
	// backend were in flight (before protocol 2026-07-28, MCP gives a client
	// no other link between them over stdio).
	Call *CallInfo
	// Params are the request's, as the server sent them (the go-sdk has
	// checked that the schema is a flat object of primitives).
	Params *mcp.ElicitParams

	// Approval is set when the host itself asks (layer_grant.go): may the
	// call Call of a [tools.NAME] grant = "ask" tool run? Backend is then
	// empty, and Params a form of one enum field, "decision".
	Approval bool
}

// SamplingRequest is an MCP server's sampling/createMessage (MCP
// 2025-11-25, client/sampling): it asks for an LLM completion.
type SamplingRequest struct {
	Backend string    // as ElicitationRequest's
	Call    *CallInfo // as ElicitationRequest's
	Params  *mcp.CreateMessageParams
}

// RootsRequest is an MCP server's roots/list (MCP 2025-11-25,
// client/roots), as Options.ListRoots sees it.
type RootsRequest struct {
	Backend string    // as ElicitationRequest's
	Call    *CallInfo // as ElicitationRequest's
}

type callInfoKey struct{}

// withCall returns ctx carrying the tool call it is made for, so that a
// server's request during the call names it.
func withCall(ctx context.Context, ci *CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, ci)
}

// callOf returns the call a handler's ctx belongs to, or nil.
func callOf(ctx context.Context) *CallInfo {
	if !transport.CallContext(ctx) {
		return nil
	}
	ci, _ := ctx.Value(callInfoKey{}).(*CallInfo)
	return ci
}

// features returns the client features offered to server s: its log level,
// the handlers of Options wrapped to name the backend and the call and to
// audit each request, and its roots (its own, else [host] roots, else
// Options.Roots). Nil when there are none.
func (h *Host) features(name string, s *config.Server) *transport.ClientOptions {
	f := &transport.ClientOptions{LogLevel: mcp.LoggingLevel(s.LogLevel)}
	switch {
	case s.Roots != nil:
		f.Roots = fileRoots(s.Roots)
	case h.config().Host.Roots != nil:
		f.Roots = fileRoots(h.config().Host.Roots)
	default:
		f.Roots = h.opts.Roots
	}
	if elicit := h.opts.Elicit; elicit != nil {
		f.Elicit = func(ctx context.Context, req *mcp.ElicitRequest) (res *mcp.ElicitResult, err error) {
			ci := callOf(ctx)
			start := time.Now()
			defer func() { h.auditAsk(OpElicit, name, ci, start, res, err) }()
			return elicit(ctx, &ElicitationRequest{Backend: name, Call: ci, Params: req.Params})
		}
	}
	if sample := h.opts.Sample; sample != nil {
		f.Sample = func(ctx context.Context, req *mcp.CreateMessageRequest) (res *mcp.CreateMessageResult, err error) {
			ci := callOf(ctx)
			start := time.Now()
			defer func() { h.auditAsk(OpSample, name, ci, start, res, err) }()
			return sample(ctx, &SamplingRequest{Backend: name, Call: ci, Params: req.Params})
		}
	}
	if list := h.opts.ListRoots; list != nil {
		f.ListRoots = func(ctx context.Context) ([]*mcp.Root, bool, error) {
			return list(ctx, &RootsRequest{Backend: name, Call: callOf(ctx)})
		}
	}
	if f.Elicit != nil || f.Sample != nil || f.ListRoots != nil {
		// A host that answers servers' requests offers protocol
		// 2025-11-25, in which servers of both eras can send them during a
		// call (see transport.ProtocolClassic).
		f.ProtocolVersion = transport.ProtocolClassic
	}
	if f.LogLevel == "" && f.Roots == nil && f.Elicit == nil && f.Sample == nil && f.ListRoots == nil {
		return nil
	}
	return f
}

func fileRoots(uris []string) []*mcp.Root {
	roots := make([]*mcp.Root, 0, len(uris))
	for _, u := range uris {
		roots = append(roots, &mcp.Root{URI: u})
	}
	return roots
}

// auditAsk writes the audit record of one elicitation or sampling request.
// For an accepted elicitation, Args holds the content the user gave,
// redacted like a call's arguments, and ArgsHMAC its keyed hash; a sampling
// request's record holds no content, only ResultBytes, the size of the
// answer's JSON text.
func (h *Host) auditAsk(op, backend string, ci *CallInfo, start time.Time, res any, err error) {
	if !h.audit.enabled() {
		return
	}
	rec := &AuditRecord{Time: start.UTC(), Op: op, Backend: backend, Decision: "none", Outcome: OutcomeOK}
	if ci != nil {
		rec.Tool, rec.Profile, rec.Client = ci.Tool, ci.Profile, ci.Client
	}
	switch r := res.(type) {
	case *mcp.ElicitResult:
		if r != nil {
			rec.Outcome = r.Action
			if r.Content != nil {
				if raw, jerr := json.Marshal(r.Content); jerr == nil {
					if v, derr := decodeJSON(raw); derr == nil {
						canonical, redacted := canonicalArgs(v, h.audit, len(raw))
						rec.ArgsHMAC, rec.Args = h.audit.hashArgs(canonical), redacted
					}
				}
			}
		}
	case *mcp.CreateMessageResult:
		if r != nil {
			if raw, jerr := json.Marshal(r); jerr == nil {
				rec.ResultBytes = len(raw)
			}
		}
	}
	if err != nil {
		rec.Outcome, rec.Error = OutcomeError, err.Error()
	}
	rec.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	h.audit.write(rec)
}
