package host

import "context"

// rateLayer refuses a call over a rate limit ([serve.clients.NAME],
// [profiles.NAME] or [tools.NAME] rate) with a *RateLimitedError
// (ErrRateLimited): a token bucket per limit, in memory for one process, in
// the store when it is shared by replicas (ratelimit.go says which buckets
// a call takes from, and what happens when the store does not answer). The
// refusal is audited: decision "deny", its rule the limit, outcome
// "rate_limited". Without any rate configured it costs one atomic load and
// a pointer comparison. Issue 25, item 4.
func rateLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		t := h.rates.current(h.config())
		if t.empty {
			return next(ctx, o)
		}
		var arr [3]*rateBucket
		bs := t.buckets(ctx, o, &arr)
		if len(bs) == 0 {
			return next(ctx, o)
		}
		if err := h.takeRate(ctx, bs); err != nil {
			if rl, ok := err.(*RateLimitedError); ok {
				o.out.decision = Decision{Rule: rl.Limit}
			}
			return nil, err
		}
		return next(ctx, o)
	}
}
