package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// fallbackLayer gives a tool call that failed its [tools.NAME] fallback:
// when the backend failed it (after any retries), its backend was
// unavailable or its circuit was open, the same arguments go to the
// fallback tool through the whole pipeline again (its own policy decision,
// validation, audit record and deadline; a fallback's own fallback is not
// followed). Otherwise it names the op in its error ("TOOL: ...",
// "prompt NAME: ...", "resource URI of BACKEND: ...").
func fallbackLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		res, err := next(ctx, o)
		if err == nil {
			return res, nil
		}
		switch o.method {
		case methodCallTool:
			if fb := fallback(o.e, o.fallbackFor, err); fb != "" {
				o.b.logger.Warn("call failed; using its fallback", "tool", o.name, "fallback", fb, "error", err)
				o.primaryErr, o.fellBack = fmt.Errorf("%s: %w", o.name, err), true
				if o.rec != nil {
					o.rec.Fallback = fb
				}
				f := newOp()
				f.method, f.profile, f.name, f.args, f.fallbackFor = methodCallTool, o.profile, fb, json.RawMessage(o.raw), o.name
				return h.runOp(ctx, f)
			}
			return nil, fmt.Errorf("%s: %w", o.name, err)
		case methodGetPrompt:
			return nil, fmt.Errorf("prompt %q: %w", o.name, err)
		case methodReadResource:
			return nil, fmt.Errorf("resource %q of %s: %w", o.name, o.backend, err)
		}
		return nil, err
	}
}

// fallback returns the fallback configured for e (the tool) when err may
// be worked around by it (an open circuit, an unavailable backend, or a
// backend failure left after any retries), and "" otherwise. A fallback
// call (fallbackFor set) has none.
func fallback(e entry, fallbackFor string, err error) string {
	if e.opts == nil || e.opts.Fallback == "" || fallbackFor != "" || errors.Is(err, context.Canceled) {
		return ""
	}
	if !countsAsFailure(err) && !errors.Is(err, ErrCircuitOpen) {
		return ""
	}
	return e.opts.Fallback
}
