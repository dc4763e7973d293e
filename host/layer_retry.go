package host

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/toolhost/toolhost/transport"
)

// Retry delays between attempts of one call (exponential, ±50% jitter),
// always within the call's deadline.
const (
	retryMin = 20 * time.Millisecond
	retryMax = time.Second
)

// retryLayer sends an op again, after a backoff and within its deadline,
// when the failure never reached the backend (transport.ErrNotSent, so
// sending it again cannot run anything twice) or, for a tool whose
// [tools.NAME] has retry = true, when the backend failed it. An op that
// could not get a connection at all (a failed backend, or one still not
// ready at the deadline) is not retried. The number of retries is the op's
// outcome (for the audit record).
func retryLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (res any, err error) {
		opts := o.dst.entry.opts // a tools/call's [tools.NAME]; nil for any other op
		idempotent := opts != nil && opts.Retry
		var bo *backoff.ExponentialBackOff
		for {
			res, err = next(ctx, o)
			if err == nil || o.out.noRetry || ctx.Err() != nil {
				break
			}
			if !errors.Is(err, transport.ErrNotSent) && !(idempotent && countsAsFailure(err)) {
				break
			}
			if bo == nil {
				bo = &backoff.ExponentialBackOff{InitialInterval: retryMin, RandomizationFactor: 0.5, Multiplier: 2, MaxInterval: retryMax}
				bo.Reset()
			}
			wait := bo.NextBackOff()
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
				break
			}
			o.dst.b.logger.Debug("retrying", "method", o.req.method, "name", o.req.name, "after", wait, "error", err)
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			if ctx.Err() != nil {
				break
			}
			o.out.retries++
		}
		return res, err
	}
}
