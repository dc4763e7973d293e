package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	jsonschema "github.com/toolhost/toolhost/internal/jsonschemav6"
)

// call is CallTool in the view of profile ("" for none): one run of the
// call pipeline (pipeline.go), its arguments parsed once for every layer
// (args.go).
func (h *Host) call(ctx context.Context, profile, name string, given any) (*mcp.CallToolResult, error) {
	o := newOp()
	o.argsBuf = newArgs(given)
	o.req = request{method: methodCallTool, profile: profile, name: name, args: &o.argsBuf}
	return h.runCall(ctx, o)
}

// runCall runs the tools/call o, which it takes from newOp with its
// request set but for its view and start, and gives it back. A call on a
// closed Host (ErrClosed), or in the view of a profile Host.Apply removed
// (ErrUnknownProfile), is refused before it enters the pipeline (and is
// not audited). The call's one deadline starts now (or at the earlier
// start WithCallStart gave, unless the call is a fallback). The error is
// named once, here (op.named).
func (h *Host) runCall(ctx context.Context, o *op) (*mcp.CallToolResult, error) {
	defer freeOp(o)
	h.mu.RLock()
	o.req.view = h.views[o.req.profile]
	closed := h.closed
	h.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	if o.req.view == nil {
		return nil, profileRemoved(o.req.profile)
	}
	o.req.start = callStart(ctx, o.req.fallbackFor)
	res, err := h.pipe.call(ctx, o)
	if err != nil {
		return nil, o.named(err)
	}
	r, _ := res.(*mcp.CallToolResult)
	return r, nil
}

// structured returns v in the form the validator takes (JSON values), going
// through JSON when it is not one already.
func structured(v any) any {
	switch v.(type) {
	case map[string]any, []any, string, float64, bool, json.Number:
		return v
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return v
	}
	return out
}

// finish completes and writes the audit record of one call.
func (h *Host) finish(rec *AuditRecord, res *mcp.CallToolResult, err error, invalid string) {
	rec.Outcome = outcomeOf(res, err, invalid)
	switch {
	case invalid != "":
		rec.Error = invalid
	case err != nil:
		rec.Error = err.Error()
	}
	h.audit.write(rec)
}

// outcomeOf returns the Outcome constant of an op that returned res and
// err, invalid being the validation message of arguments that did not
// match the tool's inputSchema (the audit record's Outcome, the span's
// error.type).
func outcomeOf(res *mcp.CallToolResult, err error, invalid string) string {
	switch {
	case invalid != "":
		return OutcomeInvalidArguments
	case err == nil && res != nil && res.IsError:
		return OutcomeToolError
	case err == nil:
		return OutcomeOK
	case errors.Is(err, ErrUnknownTool):
		return OutcomeUnknownTool
	case errors.Is(err, ErrToolNotAllowed), errors.Is(err, ErrPromptNotAllowed), errors.Is(err, ErrResourceNotAllowed),
		errors.Is(err, ErrToolDisabled), errors.Is(err, ErrToolChanged):
		return OutcomeDenied
	case errors.Is(err, ErrGrantRequired): // grants
		return OutcomeDenied
	case errors.Is(err, ErrCircuitOpen):
		return OutcomeCircuitOpen
	case errors.Is(err, ErrRateLimited):
		return OutcomeRateLimited
	case errors.Is(err, ErrInvalidArguments):
		return OutcomeInvalidArguments
	case errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled
	}
	return OutcomeBackendError
}
