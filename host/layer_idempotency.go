package host

import "context"

// idempotencyLayer answers a call made again with the same idempotency key
// (REST idempotency_key, MCP _meta["io.toolhost/idempotency-key"],
// WithIdempotencyKey) with the stored result of the first completed one,
// for a tool marked idempotent; a concurrent duplicate waits for the first;
// the key reused with other arguments (or for another tool) is
// ErrIdempotencyConflict. Issue 25, item 5; idempotency.go has the rules.
// It sits below validate (invalid arguments never claim a key) and above
// fallback, breaker, deadline and retry (a replay reaches none of them;
// a call that ends in its fallback's result stores that result: the
// caller got it). A call without a key costs one context lookup. It
// writes the audit record's Idempotency (o.out.record) itself.
func idempotencyLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		key := idemKeyOf(ctx)
		if key == "" || o.req.fallbackFor != "" {
			// No key, or a fallback call: its tool's call holds the key.
			return next(ctx, o)
		}
		if err := CheckIdempotencyKey(key); err != nil {
			return nil, err
		}
		if !o.dst.entry.idempotent() {
			o.out.record.Idempotency = IdemIgnored
			return next(ctx, o)
		}
		return h.idemCall(ctx, o, next, key)
	}
}
