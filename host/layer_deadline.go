package host

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// deadlineLayer sets the one deadline of an attempt: the backend's timeout
// (its timeout, else [host] call_timeout, default 30s) from the attempt's
// start, or ctx's deadline if earlier. A tools/call starts when its caller
// hands it to the pipeline (request.start), so the deadline also covers
// resolve's wait for a backend whose tools are not known yet (a lazy start,
// a first start that failed and is being retried); any other op starts
// here. It covers everything below it: waiting for the backend to be ready
// (a start, a restart), waiting for a free plugin instance, the request
// and its retries. The host is its only owner: transports (the sandbox included)
// enforce the deadline they are given and set none of their own. A
// fallback is a new attempt with a deadline of its own.
//
// A tools/call of a tool with its own [tools.NAME] timeout gets that
// instead of its backend's (shorter or longer), from the same start.
//
// A timeout error that comes back says which deadline passed (see
// DeadlineError): the tool's timeout, the backend's or the caller's.
func deadlineLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		var cancel context.CancelFunc
		if t := o.dst.entry.opts; t != nil && t.Timeout > 0 && o.req.method == methodCallTool {
			ctx, cancel = toolBound(ctx, o.req.start, t.Timeout.Std(), o.req.name)
		} else {
			ctx, cancel = o.dst.b.bound(ctx, o.req.start)
		}
		defer cancel()
		res, err := next(ctx, o)
		if err != nil {
			err = nameDeadline(ctx, err)
		}
		return res, err
	}
}

// WithCallStart returns a context telling CallTool (and View.CallTool) that
// the call began at t, before CallTool was called: for a program that
// starts a Host for one call (toolhost call), so that the time New spent
// starting the call's backend is inside the call's one deadline. The
// deadline (the backend's timeout) then runs from t rather than from
// CallTool; one already passed fails the call with ErrTimeout. A zero t, or
// one later than CallTool's start, is ignored; a fallback's deadline runs
// from its own start.
func WithCallStart(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, callStartKey{}, t)
}

type callStartKey struct{}

// callStart is when a tools/call that enters the pipeline now began: now,
// or the earlier start ctx carries (WithCallStart) unless the call is the
// fallback of fallbackFor.
func callStart(ctx context.Context, fallbackFor string) time.Time {
	now := time.Now()
	if t, ok := ctx.Value(callStartKey{}).(time.Time); ok && fallbackFor == "" && !t.IsZero() && t.Before(now) {
		return t
	}
	return now
}

// bound returns ctx bounded by the deadline of an attempt on b that
// started at start (now, if zero): start plus b's timeout, or ctx's own
// deadline if earlier. When b's deadline passes, ctx's cause
// (context.Cause) is a *DeadlineError naming it.
func (b *backend) bound(ctx context.Context, start time.Time) (context.Context, context.CancelFunc) {
	if start.IsZero() {
		start = time.Now()
	}
	e := b.deadlineErr.Load()
	if e == nil {
		// One per backend (its timeout is fixed when it is built), not
		// a Sprintf per call.
		e = &DeadlineError{By: b.timeoutName()}
		b.deadlineErr.Store(e)
	}
	return context.WithDeadlineCause(ctx, start.Add(b.timeout), e)
}

// toolBound is bound for a tool with its own timeout d ([tools.NAME]
// timeout): the DeadlineError names "[tools.NAME] timeout (d)".
func toolBound(ctx context.Context, start time.Time, d time.Duration, name string) (context.Context, context.CancelFunc) {
	if start.IsZero() {
		start = time.Now()
	}
	return context.WithDeadlineCause(ctx, start.Add(d), &DeadlineError{By: fmt.Sprintf("[tools.%s] timeout (%v)", name, d)})
}

// timeoutName names b's timeout and where it comes from, for a
// DeadlineError: "the backend's timeout (2s)", "[host] call_timeout (30s)"
// or "the default call_timeout (30s)".
func (b *backend) timeoutName() string {
	switch b.timeoutFrom {
	case timeoutHost:
		return fmt.Sprintf("[host] call_timeout (%v)", b.timeout)
	case timeoutDefault:
		return fmt.Sprintf("the default call_timeout (%v)", b.timeout)
	}
	return fmt.Sprintf("the backend's timeout (%v)", b.timeout)
}

// Where a backend's timeout comes from (backend.timeoutFrom).
const (
	timeoutOwn     = iota // its own timeout (or Options.Timeout of Host.Add)
	timeoutHost           // [host] call_timeout
	timeoutDefault        // config.DefaultCallTimeout
)

// DeadlineError is the error of a call whose deadline passed: it wraps
// ErrTimeout and context.DeadlineExceeded, and By says which deadline it
// was. Host methods return it wrapped (errors.As finds it) when the
// deadline passed while the host was waiting (for the backend to be
// ready); when it passed during the request, the transport's timeout
// error is returned instead, with ": BY passed" added to its text.
type DeadlineError struct {
	// By names the deadline: "[tools.NAME] timeout (5s)" (the tool's
	// own), "the backend's timeout (2s)" (its timeout key), "[host] call_timeout (30s)", "the default call_timeout
	// (30s)", or "the caller's deadline" (the context given to the call
	// had an earlier one).
	By string
}

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("%v: %s passed (%v)", ErrTimeout, e.By, context.DeadlineExceeded)
}

// Unwrap returns ErrTimeout and context.DeadlineExceeded.
func (e *DeadlineError) Unwrap() []error { return []error{ErrTimeout, context.DeadlineExceeded} }

// callerDeadline is the DeadlineError of a deadline the host did not set.
var callerDeadline = &DeadlineError{By: "the caller's deadline"}

// deadlineOf returns the DeadlineError of ctx, whose deadline has passed:
// the host's (its cause, see bound) or else the caller's.
func deadlineOf(ctx context.Context) *DeadlineError {
	var de *DeadlineError
	if errors.As(context.Cause(ctx), &de) {
		return de
	}
	return callerDeadline
}

// nameDeadline adds to err, a failure of an op under ctx, which deadline
// passed, when err is a timeout of ctx's deadline that does not say so yet.
func nameDeadline(ctx context.Context, err error) error {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !(errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded)) {
		return err
	}
	var de *DeadlineError
	if errors.As(err, &de) {
		return err
	}
	return fmt.Errorf("%w: %s passed", err, deadlineOf(ctx).By)
}
