package host

import "context"

// breakerLayer passes a tools/call through its backend's circuit breaker
// and its tool's (see breaker.go): while either is open the call fails
// fast with a *CircuitOpenError (ErrCircuitOpen); its outcome, after any
// retries, counts for both (see countsAsFailure). It is in the call
// pipeline only: prompts and resources neither consult nor trip the
// breakers, since a missing prompt or URI is the caller's mistake, not the
// backend failing.
func breakerLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		b := o.dst.b
		br, tbr := b.breakers(o.req.name)
		doneB, err := br.allow(b.name, "")
		if err != nil {
			return nil, err
		}
		doneT, err := tbr.allow(b.name, o.req.name)
		if err != nil {
			doneB(false)
			return nil, err
		}
		res, err := next(ctx, o)
		failed := countsAsFailure(err)
		doneT(failed)
		doneB(failed)
		return res, err
	}
}
