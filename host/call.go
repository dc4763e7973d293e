package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// call is CallTool in the view of profile ("" for none): one run of the
// pipeline (pipeline.go).
func (h *Host) call(ctx context.Context, profile, name string, args any) (*mcp.CallToolResult, error) {
	o := newOp()
	o.method, o.profile, o.name, o.args = methodCallTool, profile, name, args
	res, err := h.runOp(ctx, o)
	r, _ := res.(*mcp.CallToolResult)
	if err != nil {
		return nil, err
	}
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
	switch {
	case invalid != "":
		rec.Outcome, rec.Error = OutcomeInvalidArguments, invalid
	case err == nil && res != nil && res.IsError:
		rec.Outcome = OutcomeToolError
	case err == nil:
		rec.Outcome = OutcomeOK
	default:
		rec.Error = err.Error()
		switch {
		case errors.Is(err, ErrUnknownTool):
			rec.Outcome = OutcomeUnknownTool
		case errors.Is(err, ErrToolNotAllowed), errors.Is(err, ErrPromptNotAllowed), errors.Is(err, ErrResourceNotAllowed):
			rec.Outcome = OutcomeDenied
		case errors.Is(err, ErrCircuitOpen):
			rec.Outcome = OutcomeCircuitOpen
		case errors.Is(err, ErrInvalidArguments):
			rec.Outcome = OutcomeInvalidArguments
		case errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded):
			rec.Outcome = OutcomeTimeout
		case errors.Is(err, context.Canceled):
			rec.Outcome = OutcomeCanceled
		default:
			rec.Outcome = OutcomeBackendError
		}
	}
	h.audit.write(rec)
}
