package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolhost/toolhost/transport"
)

// call is CallTool in the view of profile ("" for none).
func (h *Host) call(ctx context.Context, profile, name string, args any) (res *mcp.CallToolResult, err error) {
	return h.callAs(ctx, profile, name, args, "")
}

// callAs is call; fallbackFor names the tool this call is the fallback of
// (a fallback's own fallback is not followed).
func (h *Host) callAs(ctx context.Context, profile, name string, args any, fallbackFor string) (res *mcp.CallToolResult, err error) {
	h.mu.RLock()
	e, ok := h.tools[name]
	closed := h.closed
	h.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	var unavailable error // why name is not in the catalogue, when its backend says
	if !ok {
		// Perhaps a tool of a lazy backend that has not started yet, or
		// of one still starting: wait for it within the call's deadline.
		h.ensureStarted(ctx)
		e, ok, unavailable = h.resolve(ctx, name)
	}
	h.mu.RLock()
	vw := h.views[profile]
	h.mu.RUnlock()
	if vw == nil {
		return nil, profileRemoved(profile)
	}

	var rec *AuditRecord
	var start time.Time
	var invalid string   // the validation message of invalid arguments
	var primaryErr error // the error that made the call use its fallback
	if h.audit.enabled() {
		start = time.Now()
		rec = &AuditRecord{Time: start.UTC(), Profile: profile, Client: clientOf(ctx), Tool: name, Decision: "none", FallbackFor: fallbackFor}
		defer func() {
			rec.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
			if rec.Fallback != "" {
				// This call's own outcome; the fallback has its record.
				h.finish(rec, nil, primaryErr, "")
				return
			}
			h.finish(rec, res, err, invalid)
		}()
	}

	// The arguments are decoded once, up front, so that every audit record
	// (denied and unknown-tool calls too) carries their hash and redacted
	// copy.
	raw, argErr := argsJSON(args, rec != nil || ok && e.in != nil && !h.noValidate)
	var val any
	decoded := false
	decode := func() error {
		if decoded {
			return nil
		}
		v, derr := decodeJSON(raw)
		if derr != nil {
			return argsError(args, derr)
		}
		val, decoded = v, true
		if rec != nil {
			canonical, redactedArgs := canonicalArgs(val, h.audit, len(raw))
			rec.ArgsSHA256, rec.Args = hashArgs(canonical), redactedArgs
		}
		return nil
	}
	if rec != nil && argErr == nil {
		argErr = decode()
	}

	if !ok && unavailable != nil {
		if rec != nil {
			rec.Backend = unavailable.(*resolveError).backend
		}
		return nil, fmt.Errorf("%s: %w", name, unavailable)
	}
	if !ok {
		// Suggest only names of this view: another profile's tools stay
		// unnamed.
		return nil, &UnknownToolError{Name: name, Similar: similar(name, vw.names)}
	}
	d := vw.decisions[name]
	if rec != nil {
		rec.Backend, rec.Rule, rec.Decision = e.b.name, d.Rule, "deny"
		if d.Allowed {
			rec.Decision = "allow"
		}
	}
	if !d.Allowed {
		return nil, &ToolNotAllowedError{Name: name, Profile: profile, Rule: d.Rule}
	}
	if vw.prof != nil {
		for _, r := range vw.prof.Requires {
			if down, lastErr := h.named(r).down(); down {
				return nil, fmt.Errorf("%s: %w: profile %q requires backend %q, which is not ready; try again once it is: %w", name, ErrRequiredBackend, profile, r, lastErr)
			}
		}
	}

	if argErr != nil {
		if rec != nil {
			rec.ArgsSHA256 = hashArgs(raw)
		}
		return nil, fmt.Errorf("%s: %w", name, argErr)
	}
	check := e.in != nil && !h.noValidate
	if check || rec != nil {
		if derr := decode(); derr != nil {
			return nil, fmt.Errorf("%s: %w", name, derr)
		}
		if check {
			if verr := e.in.Validate(val); verr != nil {
				msg := fmt.Sprintf("invalid arguments for %s: %s", name, describeInvalid("arguments", verr))
				invalid = msg
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil
			}
		}
	}

	parent := ctx
	if e.b.kind != KindPlugin {
		// The sandbox applies a plugin's timeout (the same e.b.timeout)
		// itself: one deadline per call, not two. (Waiting for a plugin
		// that restarts, and retries, get their own; see invoke.)
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.b.timeout)
		defer cancel()
	}
	if e.b.kind != KindPlugin && (h.opts.Elicit != nil || h.opts.Sample != nil) {
		// A server's elicitation or sampling request during the call
		// names it.
		ctx = withCall(ctx, &CallInfo{Tool: name, Profile: profile, Client: clientOf(ctx)})
	}
	var size, retries int
	res, size, retries, err = h.invoke(ctx, e, name, raw, e.b.maxOutput > 0 || rec != nil)
	if rec != nil {
		rec.Retries = retries
	}
	if err != nil {
		if fb := fallback(e, fallbackFor, err); fb != "" {
			e.b.logger.Warn("call failed; using its fallback", "tool", name, "fallback", fb, "error", err)
			primaryErr = fmt.Errorf("%s: %w", name, err)
			if rec != nil {
				rec.Fallback = fb
			}
			return h.callAs(parent, profile, fb, json.RawMessage(raw), name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if rec != nil {
		rec.ResultBytes = size
	}
	if e.b.maxOutput > 0 && size > e.b.maxOutput {
		return nil, fmt.Errorf("%s: result of %d bytes exceeds max_output (%d bytes) of [servers.%s]: %w; raise max_output or ask for less",
			name, size, e.b.maxOutput, e.b.name, transport.ErrOutputTooLarge)
	}
	if e.out != nil && !h.noValidate && !res.IsError && res.StructuredContent != nil {
		if verr := e.out.Validate(structured(res.StructuredContent)); verr != nil {
			return nil, fmt.Errorf("%s: %w: %s", name, ErrInvalidOutput, describeInvalid("structuredContent", verr))
		}
	}
	return res, nil
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
