package host

import "context"

// deadlineLayer sets the one deadline of an attempt: the backend's timeout
// (its timeout, else [host] call_timeout, default 30s), or ctx's deadline
// if earlier. It covers everything below it: waiting for the backend to be
// ready (a lazy start, a restart), waiting for a free plugin instance, the
// request and its retries. The host is its only owner: transports (the
// sandbox included) enforce the deadline they are given and set none of
// their own. A fallback is a new attempt with a deadline of its own.
func deadlineLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		ctx, cancel := context.WithTimeout(ctx, o.b.timeout)
		defer cancel()
		return next(ctx, o)
	}
}
