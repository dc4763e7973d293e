package host

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/transport"
)

// retryLayer sends an op again, after a backoff and within its deadline,
// when the failure never reached the backend (transport.ErrNotSent, so
// sending it again cannot run anything twice) or, for a tool whose
// [tools.NAME] has retry = true, when the backend failed it. An op that
// could not get a connection at all (a failed backend, or one still not
// ready at the deadline) is not retried.
//
// Retries are capped by the tool's max_retries (config.DefaultMaxRetries,
// 3, for a tool without one and for any op that is not a tools/call) and
// stop at the deadline: a wait that would end after it is not started. The
// wait is the tool's backoff (default 20ms, doubling with ±50% jitter up to
// 1s). The number of retries is the op's outcome (for the audit record).
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
			if o.out.retries >= opts.RetryLimit() {
				o.dst.b.logger.Debug("not retrying: max_retries reached", "method", o.req.method, "name", o.req.name, "retries", o.out.retries, "error", err)
				break
			}
			if bo == nil {
				bo = newRetryBackoff(opts)
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

// newRetryBackoff returns the backoff between the retries of a call of the
// tool with options t (nil: the defaults).
func newRetryBackoff(t *config.ToolOptions) *backoff.ExponentialBackOff {
	first, most := t.RetryWait()
	bo := &backoff.ExponentialBackOff{InitialInterval: first, RandomizationFactor: 0.5, Multiplier: 2, MaxInterval: most}
	bo.Reset()
	return bo
}
