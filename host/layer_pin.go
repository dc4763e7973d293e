package host

import "context"

// pinLayer refuses a call of a quarantined tool: one whose definition
// (name, description, input and output schema, annotations) differs from
// the one approved ([host] pin; toolhost approve), with a
// *ToolChangedError (ErrToolChanged) naming what changed, or, while the
// pins could not be read from the store, ErrStoreUnavailable. The refusal
// is decided "deny" by rule "pin" (PinRule) for the audit record.
// (Quarantined tools are also left out of lists: see pins.go.) Without
// pinning it costs one atomic load. Issue 25, item 6.
func pinLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		if q := h.quarantine.Load(); q != nil {
			if e, ok := (*q)[o.req.name]; ok {
				o.out.decided, o.out.decision = true, Decision{Rule: PinRule}
				return nil, e.err(o.req.name)
			}
		}
		return next(ctx, o)
	}
}
