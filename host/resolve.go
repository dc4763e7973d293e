package host

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolhost/toolhost/config"
)

// resolveError says why a name whose prefix belongs to a backend is not in
// the catalogue: that backend has failed, or is still starting when the
// call's deadline comes. It wraps ErrBackendUnavailable and the backend's
// error.
type resolveError struct {
	backend string
	err     error
}

func (e *resolveError) Error() string { return e.err.Error() }
func (e *resolveError) Unwrap() error { return e.err }

// owners returns the backends whose prefix name starts with and whose tools
// are not known yet (no successful start so far), longest prefix first.
// Tools are listed only once a backend has started, so these are the
// backends name may belong to.
func (h *Host) owners(name string) []*backend {
	var out []*backend
	for _, b := range h.all() {
		p := invalidNameChars.ReplaceAllString(b.prefix, "_")
		if !strings.HasPrefix(name, p) || len(name) == len(p) {
			continue
		}
		b.mu.Lock()
		known := b.known
		b.mu.Unlock()
		if !known {
			out = append(out, b)
		}
	}
	for i := 1; i < len(out); i++ { // few backends: insertion sort by prefix length
		for j := i; j > 0 && len(out[j].prefix) > len(out[j-1].prefix); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// resolve finds name in the catalogue. A name that is not there but whose
// prefix belongs to a backend that has never been ready and is coming
// (idle, starting, or restarting after a slow start: see coming) waits for
// that backend, within ctx bounded by the backend's call timeout, and is
// then looked up again. When it is still missing and such a backend is
// failing (failed, or restarting after an error), or still not ready at
// the deadline, the error (a *resolveError) wraps ErrBackendUnavailable and
// that backend's last error, so a broken backend does not look like a
// typo. ok is false with a nil error for a name no backend can serve
// (ErrUnknownTool).
func (h *Host) resolve(ctx context.Context, name string) (e entry, ok bool, err error) {
	lookup := func() (entry, bool) {
		h.mu.RLock()
		defer h.mu.RUnlock()
		e, ok := h.tools[name]
		return e, ok
	}
	if e, ok = lookup(); ok {
		return e, true, nil
	}
	owners := h.owners(name)
	if len(owners) == 0 {
		return e, false, nil
	}
	if _, has := ctx.Deadline(); !has {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, owners[0].timeout)
		defer cancel()
	}
	for {
		waiting := false
		var wakes []<-chan struct{}
		var failed *backend
		for _, b := range owners {
			b.mu.Lock()
			state, known, wake, coming := b.state, b.known, b.wake, b.coming()
			b.mu.Unlock()
			switch {
			case known || state == StateClosed:
			case !coming:
				if failed == nil {
					failed = b
				}
			default:
				if state == StateIdle {
					select {
					case b.startReq <- struct{}{}:
					default:
					}
				}
				waiting = true
				wakes = append(wakes, wake)
			}
		}
		if e, ok = lookup(); ok {
			return e, true, nil
		}
		if !waiting {
			if failed != nil {
				return e, false, failed.unavailable(nil)
			}
			return e, false, nil
		}
		if !h.waitAny(ctx, wakes) {
			if h.ctx.Err() != nil {
				return e, false, ErrClosed
			}
			if e, ok = lookup(); ok {
				return e, true, nil
			}
			return e, false, owners[0].unavailable(ctxErr(ctx))
		}
	}
}

// waitAny waits until one of wakes is closed (true), or ctx ends or the
// host closes (false).
func (h *Host) waitAny(ctx context.Context, wakes []<-chan struct{}) bool {
	if len(wakes) == 1 {
		select {
		case <-wakes[0]:
			return true
		case <-ctx.Done():
		case <-h.stop:
		}
		return false
	}
	woke := make(chan struct{}, len(wakes))
	done := make(chan struct{})
	defer close(done)
	for _, w := range wakes {
		go func() {
			select {
			case <-w:
				woke <- struct{}{}
			case <-done:
			}
		}()
	}
	select {
	case <-woke:
		return true
	case <-ctx.Done():
	case <-h.stop:
	}
	return false
}

// unavailable is the error for a call to b's tools before b has ever been
// ready: b is failing (deadline nil), or was still not ready when the
// call's deadline came (deadline is the context's error, see ctxErr).
func (b *backend) unavailable(deadline error) error {
	b.mu.Lock()
	state, lastErr := b.state, b.lastErr
	b.mu.Unlock()
	var err error
	switch {
	case deadline == nil && lastErr != nil:
		err = fmt.Errorf("%w: backend %q is %s (see toolhost status): %w", ErrBackendUnavailable, b.name, state, lastErr)
	case deadline == nil:
		err = fmt.Errorf("%w: backend %q %s (see toolhost status)", ErrBackendUnavailable, b.name, state)
	default:
		why := ""
		if lastErr != nil {
			why = fmt.Sprintf(" (last error: %v)", lastErr)
		}
		err = fmt.Errorf("%w: backend %q still %s when the call's deadline came; its tools are not known yet%s: %w",
			ErrBackendUnavailable, b.name, state, why, deadline)
	}
	return &resolveError{backend: b.name, err: err}
}

// awaitEager waits, within ctx, for every eager backend that has never been
// ready and is coming (see coming), each for up to its startup timeout from
// now. (One restarting after an error other than a slow start is not waited
// for: its error is known, and Status shows it.)
func (h *Host) awaitEager(ctx context.Context) {
	for _, b := range h.all() {
		if b.sv.Start == config.StartLazy {
			continue
		}
		bctx, cancel := context.WithTimeout(ctx, b.startupTimeout())
		for {
			b.mu.Lock()
			state, known, wake, coming := b.state, b.known, b.wake, b.coming()
			b.mu.Unlock()
			if known || state == StateIdle || !coming {
				break
			}
			if !h.waitAny(bctx, []<-chan struct{}{wake}) {
				break
			}
		}
		cancel()
	}
}

// coming reports whether b, not ready yet, is on its way: idle (the next
// use starts it), starting, or restarting after an attempt that failed only
// because startup_timeout came (a slow start, as on a busy machine). A
// backend restarting after any other error, failed or closed is not: its
// error is known. The caller holds b.mu.
func (b *backend) coming() bool {
	switch b.state {
	case StateIdle, StateStarting:
		return true
	case StateRestarting:
		return b.slowStart
	}
	return false
}
