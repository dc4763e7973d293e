package host

import (
	"context"
	"errors"

	"github.com/toolhost/toolhost/config"
)

// fallbackLayer gives a tool call that failed its [tools.NAME] fallback
// list: when the backend failed it (after any retries), its backend was
// unavailable or its circuit was open, the same arguments go to each
// fallback tool in the order listed, through the whole pipeline again
// (its own policy decision, validation, audit record with FallbackFor set,
// and deadline), until one does not fail: a fallback that fails in any way
// (refused by policy too) moves on to the next; the caller's cancellation
// stops the list. A fallback's own fallbacks are not followed (not
// chained). The call's outcome then names the last fallback tried and the
// error that made the tool fall back; the result and error are that
// fallback's, named by its own call.
func fallbackLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		res, err := next(ctx, o)
		if err == nil {
			return res, nil
		}
		fbs := fallbacks(o.dst.entry, o.req.fallbackFor, err)
		if len(fbs) == 0 {
			return nil, err
		}
		o.out.primaryErr = err
		for _, fb := range fbs {
			o.dst.b.logger.Warn("call failed; using its fallback", "tool", o.req.name, "fallback", fb, "error", err)
			o.out.fallback = fb
			f := newOp()
			f.req = request{method: methodCallTool, profile: o.req.profile, name: fb, args: o.req.args, fallbackFor: o.req.name}
			res, err = h.runCall(ctx, f)
			if err == nil || ctx.Err() != nil {
				break
			}
		}
		if err != nil {
			return nil, err
		}
		return res, nil
	}
}

// fallbacks returns the fallback list configured for e (the tool) when err
// may be worked around by it (an open circuit, an unavailable backend, or
// a backend failure left after any retries), and nil otherwise. A fallback
// call (fallbackFor set) has none.
func fallbacks(e entry, fallbackFor string, err error) config.Fallbacks {
	if e.opts == nil || len(e.opts.Fallback) == 0 || fallbackFor != "" || errors.Is(err, context.Canceled) {
		return nil
	}
	if !countsAsFailure(err) && !errors.Is(err, ErrCircuitOpen) {
		return nil
	}
	return e.opts.Fallback
}
