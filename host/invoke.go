package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/transport"
)

// Retry delays between attempts of one call (exponential, ±50% jitter),
// always within the call's deadline.
const (
	retryMin = 20 * time.Millisecond
	retryMax = time.Second
)

// invoke sends one tool call to e's backend through its circuit breakers:
// it waits for the backend to be ready (starting it if idle), and sends
// the call again, after a backoff and within ctx, when the failure never
// reached the backend (transport.ErrNotSent) or, for a [tools.NAME] with
// retry = true, when the backend failed it. It returns the number of
// retries made, and the size of the result's JSON text (see callSized;
// needSize asks for it). Errors: a *CircuitOpenError (ErrCircuitOpen),
// ErrBackendUnavailable, or the transport's.
func (h *Host) invoke(ctx context.Context, e entry, name string, raw []byte, needSize bool) (*mcp.CallToolResult, int, int, error) {
	b := e.b
	br, tbr := b.breakers(name)
	doneB, err := br.allow(b.name, "")
	if err != nil {
		return nil, 0, 0, err
	}
	doneT, err := tbr.allow(b.name, name)
	if err != nil {
		doneB(false)
		return nil, 0, 0, err
	}
	idempotent := e.opts != nil && e.opts.Retry
	params := &mcp.CallToolParams{Name: e.name, Arguments: json.RawMessage(raw)}
	var bo *backoff.ExponentialBackOff
	var res *mcp.CallToolResult
	size, retries := 0, 0
	for {
		var tr transport.Transport
		var gen uint64
		tr, gen, err = b.conn(ctx)
		if err != nil {
			break
		}
		res, size, err = callSized(ctx, tr, params, needSize)
		err = b.release(gen, err)
		if err == nil || ctx.Err() != nil {
			break
		}
		if !errors.Is(err, transport.ErrNotSent) && !(idempotent && countsAsFailure(err)) {
			break
		}
		if _, ok := ctx.Deadline(); !ok {
			// A plugin call carries no host deadline (the sandbox applies
			// the timeout per attempt): retries are bounded by one.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, b.timeout)
			defer cancel()
		}
		if bo == nil {
			bo = &backoff.ExponentialBackOff{InitialInterval: retryMin, RandomizationFactor: 0.5, Multiplier: 2, MaxInterval: retryMax}
			bo.Reset()
		}
		wait := bo.NextBackOff()
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			break
		}
		b.logger.Debug("retrying call", "tool", name, "after", wait, "error", err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		if ctx.Err() != nil {
			break
		}
		retries++
	}
	failed := countsAsFailure(err)
	doneT(failed)
	doneB(failed)
	return res, size, retries, err
}

// fallback returns the fallback configured for e (the tool) when err may
// be worked around by it (an open circuit, an unavailable backend, or a
// backend failure left after any retries), and "" otherwise. A fallback
// call (fallbackFor set) has none.
func fallback(e entry, fallbackFor string, err error) string {
	if e.opts == nil || e.opts.Fallback == "" || fallbackFor != "" || errors.Is(err, context.Canceled) {
		return ""
	}
	if !countsAsFailure(err) && !errors.Is(err, ErrCircuitOpen) {
		return ""
	}
	return e.opts.Fallback
}

// down reports whether b is down for a profile's requires: failed, or
// waiting to be restarted. (Idle and starting backends are on their way.)
func (b *backend) down() (bool, error) {
	if b == nil {
		return true, ErrBackendRemoved
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == StateFailed || b.state == StateRestarting {
		if b.lastErr == nil {
			return true, fmt.Errorf("backend %s", b.state)
		}
		return true, b.lastErr
	}
	return false, nil
}
