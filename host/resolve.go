package host

import (
	"context"
	"fmt"

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
// are not in the catalogue yet (no successful start so far, or one whose
// tools are not in the catalogue yet: see catalogued), longest prefix
// first. Tools are listed only once a backend has started, so these are
// the backends name may belong to.
func (h *Host) owners(name string) []*backend {
	var out []*backend
	for _, b := range h.all() {
		if !config.MayOwnToolName(b.prefix, name) {
			continue
		}
		b.mu.Lock()
		catalogued := b.catalogued()
		b.mu.Unlock()
		if !catalogued {
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

// Coming reports whether name is not in the catalogue but may belong to a
// backend whose tools are not known yet and that may still come up: its
// prefix begins name and it has never been ready, and is idle, starting,
// or restarting (between attempts). A CallTool of such a name waits for
// that backend within the call's deadline (see CallTool) rather than
// failing with ErrUnknownTool. A gateway uses it to pass on a call of a
// tool it does not list yet. It does not start anything.
func (h *Host) Coming(name string) bool {
	h.mu.RLock()
	_, ok := h.tools[name]
	h.mu.RUnlock()
	if ok {
		return false
	}
	for _, b := range h.owners(name) {
		b.mu.Lock()
		waitable := b.waitable()
		b.mu.Unlock()
		if waitable {
			return true
		}
	}
	return false
}

// waitBound returns ctx bounded by the deadline the tools/call o (not in
// the catalogue) will have if the backend its name most likely belongs to
// serves it (the first of owners: longest prefix; or the tool's own
// [tools.NAME] timeout), from o.req.start; with no
// such backend, by [host] call_timeout from o.req.start (the wait then is for
// lazy backends to list their tools, see ensureStarted).
func (h *Host) waitBound(ctx context.Context, o *op) (context.Context, context.CancelFunc) {
	if t := h.config().Tools[o.req.name]; t != nil && t.Timeout > 0 { // the tool's own (layer_deadline.go)
		return toolBound(ctx, o.req.start, t.Timeout.Std(), o.req.name)
	}
	if owners := h.owners(o.req.name); len(owners) > 0 {
		return owners[0].bound(ctx, o.req.start)
	}
	b := &backend{timeout: h.callTimeout(0), timeoutFrom: h.timeoutFrom(0)}
	return b.bound(ctx, o.req.start)
}

// resolve finds name in the catalogue. A name that is not there but whose
// prefix belongs to a backend that has never been ready and may still come
// up (idle, starting, or restarting: see waitable) waits for that backend,
// within ctx (which carries the call's deadline, see waitBound), and is
// then looked up again. When it is still missing and such a backend has
// given up (failed, needs_login, disabled), or is still not ready at the
// deadline, the error (a *resolveError) wraps ErrBackendUnavailable and
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
	for {
		waiting := false
		var wakes []<-chan struct{}
		var failed *backend
		for _, b := range owners {
			b.mu.Lock()
			state, catalogued, wake, waitable := b.state, b.catalogued(), b.wake, b.waitable()
			b.mu.Unlock()
			switch {
			case catalogued || state == StateClosed:
			case !waitable:
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
// ready: b has given up (deadline nil), or was still not ready when the
// call's deadline came (deadline is the context's error, see ctxErr; the
// error then says when b's next start attempt is, if it is restarting).
func (b *backend) unavailable(deadline error) error {
	if deadline != nil {
		state, why := b.waitedFor()
		err := fmt.Errorf("%w: backend %q still %s when the call's deadline came; its tools are not known yet%s: %w",
			ErrBackendUnavailable, b.name, state, why, deadline)
		return &resolveError{backend: b.name, err: err}
	}
	b.mu.Lock()
	state, lastErr := b.state, b.lastErr
	b.mu.Unlock()
	err := fmt.Errorf("%w: backend %q %s", ErrBackendUnavailable, b.name, state)
	if lastErr != nil {
		err = fmt.Errorf("%w: backend %q is %s: %w", ErrBackendUnavailable, b.name, state, lastErr)
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

// catalogued reports whether b's tools are in the catalogue: it has
// started successfully, and is not between a start that has just listed
// its tools and the catalogue's rebuild (it is still starting then: it
// becomes ready after the rebuild, see start). A call to one of its tools
// in that moment (a backend that Host.Apply restarted, under load) waits
// for the rebuild instead of failing as an unknown tool. The caller holds
// b.mu.
func (b *backend) catalogued() bool { return b.known && b.state != StateStarting }

// waitable reports whether a call may wait for b, which has never been
// ready: it is idle (the call starts it), starting, or restarting (between
// attempts: the next one may succeed, as when a server comes up after
// toolhost). A backend that has given up (failed after max_restarts or a
// permanent error, needs_login), disabled or closed is not: a call fails
// at once with its error. The caller holds b.mu.
func (b *backend) waitable() bool {
	switch b.state {
	case StateIdle, StateStarting, StateRestarting:
		return true
	}
	return false
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
