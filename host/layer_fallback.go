package host

import (
	"context"
	"errors"
)

// fallbackLayer gives a tool call that failed its [tools.NAME] fallback:
// when the backend failed it (after any retries), its backend was
// unavailable or its circuit was open, the same arguments go to the
// fallback tool through the whole pipeline again (its own policy decision,
// validation, audit record and deadline; a fallback's own fallback is not
// followed). The call's outcome then names the fallback and the error that
// made it; the result and error are the fallback's, named by its own call.
func fallbackLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		res, err := next(ctx, o)
		if err == nil {
			return res, nil
		}
		fb := fallback(o.dst.entry, o.req.fallbackFor, err)
		if fb == "" {
			return nil, err
		}
		o.dst.b.logger.Warn("call failed; using its fallback", "tool", o.req.name, "fallback", fb, "error", err)
		o.out.fallback, o.out.primaryErr = fb, err
		f := newOp()
		f.req = request{method: methodCallTool, profile: o.req.profile, name: fb, args: o.req.args, fallbackFor: o.req.name}
		r, err := h.runCall(ctx, f)
		if err != nil {
			return nil, err
		}
		return r, nil
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
