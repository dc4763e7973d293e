package host

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/store"
)

// Code mode's hooks in the host (issue 27, item 3). The run itself lives in
// host/codemode; the host only ties the audit records of a run and its
// inner calls together.

type parentKey struct{}

// WithParent returns a copy of ctx whose calls' audit records name id as
// their Parent: the CorrelationID of the call they are made inside (code
// mode's run_code, whose inner calls go through the pipeline like any
// call). An empty id clears it.
func WithParent(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, parentKey{}, id)
}

func parentOf(ctx context.Context) string {
	s, _ := ctx.Value(parentKey{}).(string)
	return s
}

// CorrelationID returns the id WithCorrelationID put in ctx, or "".
func CorrelationID(ctx context.Context) string { return correlationOf(ctx) }

// NewCorrelationID returns a new correlation id: 32 hex digits, time-ordered
// (store.TimeID).
func NewCorrelationID() string { return store.TimeID(time.Now()) }

// AuditCall writes the audit record of a tool call served above the
// pipeline, by the gateway itself: code mode's run_code (whose inner calls
// have records of their own, naming it as their Parent). The record is a
// tools/call's: Profile profile, Client and CorrelationID from ctx
// (WithClient, WithCorrelationID), Tool tool, Backend backend, Decision
// "allow" by Rule rule — or "deny" by the limit when err is a
// *RateLimitedError (View.TakeRate) —, the hash and redacted copy of args (a JSON object),
// the Outcome of res and err (as for any call), LatencyMS since start and
// ResultBytes the size of res's JSON encoding. Nothing is written when
// auditing is off.
func (h *Host) AuditCall(ctx context.Context, profile, backend, tool, rule string, args json.RawMessage, res *mcp.CallToolResult, err error, start time.Time) {
	if !h.audit.enabled() {
		return
	}
	rec := &AuditRecord{Time: start.UTC(), Profile: profile, Client: clientOf(ctx), Tool: tool, Backend: backend,
		Decision: "allow", Rule: rule, CorrelationID: correlationOf(ctx), Parent: parentOf(ctx)}
	if rl := (*RateLimitedError)(nil); errors.As(err, &rl) {
		rec.Decision, rec.Rule = "deny", rl.Limit // as rateLayer audits a refusal
	}
	a := newArgs(args)
	if v, verr := a.value(); verr == nil {
		canonical, redacted := canonicalArgs(v, h.audit, len(args))
		rec.ArgsHMAC, rec.Args = h.audit.hashArgs(canonical), redacted
	} else {
		rec.ArgsHMAC = h.audit.hashArgs(args)
	}
	if res != nil {
		if b, merr := json.Marshal(res); merr == nil {
			rec.ResultBytes = len(b)
		}
	}
	rec.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	h.finish(rec, res, err, "")
}
