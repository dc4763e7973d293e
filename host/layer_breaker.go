package host

import "context"

// breakerLayer passes a tools/call through its backend's circuit breaker
// and its tool's (see breaker.go): while either is open the call fails
// fast with a *CircuitOpenError (ErrCircuitOpen); its outcome, after any
// retries, counts for both (see countsAsFailure). Prompts and resources
// neither consult nor trip the breakers: a missing prompt or URI is the
// caller's mistake, not the backend failing.
func breakerLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		if o.method != methodCallTool {
			return next(ctx, o)
		}
		br, tbr := o.b.breakers(o.name)
		doneB, err := br.allow(o.b.name, "")
		if err != nil {
			return nil, err
		}
		doneT, err := tbr.allow(o.b.name, o.name)
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
