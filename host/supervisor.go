package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/transport"
)

// supervise runs b's lifecycle until the host closes: the first start,
// restarts with backoff, health checks, idle stops, list changes and
// explicit restarts. It is the only goroutine that starts or stops b.
func (b *backend) supervise() {
	defer close(b.exited)
	var retry <-chan time.Time
	if b.sv.Start == config.StartEager {
		if err := b.attempt(); err != nil {
			retry = b.afterFailure(err)
		}
	}
	b.firstOnce.Do(func() { close(b.firstDone) })
	var health <-chan time.Time
	if b.sv.HealthCheck != config.HealthNone {
		t := time.NewTicker(b.sv.HealthInterval.Std())
		defer t.Stop()
		health = t.C
	}
	for {
		b.mu.Lock()
		state, gen, tr, lastUsed := b.state, b.gen, b.tr, b.lastUsed
		b.mu.Unlock()
		if state == StateReady && tr == nil {
			// Detached a moment ago; its new state is being set.
			state = StateStarting
		}
		var done <-chan struct{}
		var idle <-chan time.Time
		if state == StateReady {
			if w, ok := tr.(transport.Watcher); ok {
				done = w.Done()
			}
			if d := b.sv.IdleTimeout.Std(); d > 0 {
				idle = time.After(max(time.Until(lastUsed.Add(d)), time.Millisecond))
			}
		}
		select {
		case <-b.hooks.stop:
			return
		case <-b.ctx.Done():
			return
		case <-b.startReq:
			if state == StateIdle {
				if err := b.attempt(); err != nil {
					retry = b.afterFailure(err)
				}
			}
		case <-b.lostSig:
			b.mu.Lock()
			err := b.lost
			b.lost = nil
			b.mu.Unlock()
			if err != nil && retry == nil {
				retry = b.afterFailure(err)
			}
		case <-done:
			retry = b.lose(gen, explainLost(tr))
		case <-b.checkNow:
			if state == StateReady {
				if _, err := b.checkHealth(tr); err != nil {
					retry = b.lose(gen, err)
				}
			}
		case <-health:
			if state == StateReady {
				if _, err := b.checkHealth(tr); err != nil {
					retry = b.lose(gen, err)
				}
			}
		case reply := <-b.healthReq:
			if state != StateReady {
				reply <- fmt.Errorf("%w: %q is %s", ErrBackendUnavailable, b.name, state)
				break
			}
			checkErr, err := b.checkHealth(tr)
			if err != nil {
				retry = b.lose(gen, err)
			}
			reply <- checkErr
		case <-idle:
			b.stopIfIdle()
		case <-retry:
			retry = nil
			b.mu.Lock()
			b.restarts++
			b.recent = append(b.recent, time.Now())
			b.mu.Unlock()
			if err := b.attempt(); err != nil {
				retry = b.afterFailure(err)
			}
		case reply := <-b.restartReq:
			retry = nil
			b.mu.Lock()
			old := b.tr
			b.tr = nil
			b.lost = nil
			b.recent = nil
			b.restarts++
			b.mu.Unlock()
			if old != nil {
				b.closeAsync(old)
			}
			b.bo.Reset()
			err := b.attempt()
			if err != nil {
				retry = b.afterFailure(err)
			}
			reply <- err
		case c := <-b.changed:
			if c.gen == gen && state == StateReady {
				b.listChanged(tr, c.kind)
			}
		}
	}
}

// startupTimeout is b's startup_timeout, unless Options.StartupTimeout
// overrides it.
func (b *backend) startupTimeout() time.Duration {
	if b.hooks.startupTimeout > 0 {
		return b.hooks.startupTimeout
	}
	return b.sv.StartupTimeout.Std()
}

// attempt makes one attempt to start b: a fresh transport, Connect and the
// first tools/list, within startup_timeout. On success b is ready with a
// fresh pair of circuit breakers and the catalogue is rebuilt.
func (b *backend) attempt() error {
	b.mu.Lock()
	b.gen++
	gen := b.gen
	b.mu.Unlock()
	b.setState(StateStarting, nil)
	tr := b.newTr(func(k transport.ListKind) {
		select {
		case b.changed <- listChange{gen, k}:
		default:
		}
	})
	limit := b.startupTimeout()
	ctx, cancel := context.WithTimeout(b.ctx, limit)
	t0 := time.Now()
	init, err := tr.Connect(ctx)
	var tools []*mcp.Tool
	var schemas map[string]compiledTool
	if err == nil {
		tools, err = tr.ListTools(ctx)
	}
	if err == nil {
		// Compiling the schemas is part of the start, under its deadline:
		// a backend's catalogue costs its own start, not every rebuild.
		schemas, err = b.compileTools(ctx, tools)
	}
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
	cancel()
	b.mu.Lock()
	b.slowStart = err != nil && timedOut
	b.mu.Unlock()
	if err != nil {
		tr.Close()
		if timedOut {
			err = fmt.Errorf("not ready within startup_timeout (%v): %w", limit, err)
		}
		if b.ctx.Err() == nil {
			b.logger.Error("backend failed to start", "error", err)
		}
		return err
	}
	now := time.Now()
	b.mu.Lock()
	if b.state == StateClosed {
		b.mu.Unlock()
		tr.Close()
		return ErrClosed
	}
	b.tr, b.init, b.tools, b.schemas, b.known = tr, init, tools, schemas, true
	b.rewritten = nil
	b.started, b.lastUsed = now, now
	b.healthFails, b.healthErr, b.traps = 0, nil, 0
	b.br = b.newBreaker("")
	b.toolBr = map[string]*breaker{}
	b.mu.Unlock()
	b.bo.Reset()
	b.logger.Info("backend ready", "tools", len(tools), "elapsed", time.Since(t0).Round(time.Millisecond))
	// The catalogue first, so that whoever sees the state ready (a lazy
	// start's waiter) finds the tools.
	b.hooks.catalogueChanged()
	b.setState(StateReady, nil)
	return nil
}

// explainLost says why a watched transport's connection ended.
func explainLost(tr transport.Transport) error {
	err := tr.(transport.Watcher).Lost()
	if !errors.Is(err, transport.ErrConnectionLost) && !errors.Is(err, transport.ErrProtocol) {
		return fmt.Errorf("%w: the connection ended (%v)", transport.ErrConnectionLost, err)
	}
	return err
}

// lose takes b's connection gen down after err and schedules a restart
// (unless a call already detached it: then its signal will).
func (b *backend) lose(gen uint64, err error) <-chan time.Time {
	tr := b.detach(gen, err)
	if tr == nil {
		return nil
	}
	b.closeAsync(tr)
	return b.afterFailure(err)
}

// afterFailure decides what follows a lost backend or a failed start: a
// restart after the backoff, or failed when max_restarts attempts were
// already made within restart_window.
func (b *backend) afterFailure(err error) <-chan time.Time {
	if b.ctx.Err() != nil {
		return nil
	}
	if errors.Is(err, transport.ErrNeedsLogin) {
		// Restarting cannot help until someone logs in.
		b.logger.Error("backend needs an OAuth login; not restarted", "server", b.name)
		b.setState(StateNeedsLogin, err)
		b.hooks.catalogueChanged()
		return nil
	}
	if why := cannotHeal(err); why != "" {
		b.logger.Error("backend failed", "reason", why)
		b.setState(StateFailed, fmt.Errorf("%w; not restarted: %s; Host.Restart starts it again", err, why))
		b.hooks.catalogueChanged()
		return nil
	}
	now := time.Now()
	window := b.sv.RestartWindow.Std()
	b.mu.Lock()
	b.recent = slices.DeleteFunc(b.recent, func(t time.Time) bool { return now.Sub(t) > window })
	used := len(b.recent)
	b.mu.Unlock()
	if limit := *b.sv.MaxRestarts; used >= limit {
		why := fmt.Sprintf("gave up after %d restarts within restart_window (%v)", used, window)
		if limit == 0 {
			why = "not restarted (max_restarts = 0)"
		}
		b.logger.Error("backend failed", "reason", why)
		b.setState(StateFailed, fmt.Errorf("%w; %s: Host.Restart starts it again", err, why))
		b.hooks.catalogueChanged()
		return nil
	}
	d := b.bo.NextBackOff()
	b.mu.Lock()
	b.next = now.Add(d)
	b.mu.Unlock()
	b.logger.Info("restarting after backoff", "delay", d.Round(time.Millisecond))
	b.setState(StateRestarting, err)
	return time.After(d)
}

// cannotHeal says why err, a failed start of b, cannot go away by
// restarting it ("" if it can): the transport said so with a
// *transport.PermanentError (transport.ErrPermanent; a plugin whose module
// file is missing, does not match its sha256 pin, is not of a supported ABI
// or needs more memory than its cap to start). Such a backend goes straight
// to StateFailed instead of restarting with backoff: only a change of the
// file or the configuration, then Host.Restart, can make it start. A
// server's start failures are always retried (a command may be installed,
// a URL may come up).
func cannotHeal(err error) string {
	var pe *transport.PermanentError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return ""
}

// closeAsync closes a transport the backend no longer uses without holding
// up its supervisor (a stubborn child takes the whole shutdown escalation).
// Host.Close waits for it.
func (b *backend) closeAsync(tr transport.Transport) {
	b.hooks.spawn(func() { tr.Close() })
}

// stopIfIdle stops a stdio server that has had no call for idle_timeout.
func (b *backend) stopIfIdle() {
	b.mu.Lock()
	if b.state != StateReady || b.inflight > 0 || time.Since(b.lastUsed) < b.sv.IdleTimeout.Std() {
		b.mu.Unlock()
		return
	}
	tr := b.tr
	b.tr = nil
	b.mu.Unlock()
	b.logger.Info("stopping after idle_timeout", "idle_timeout", b.sv.IdleTimeout)
	b.setState(StateIdle, nil)
	b.closeAsync(tr)
}

// listChanged handles a list_changed notification of a ready backend.
func (b *backend) listChanged(tr transport.Transport, kind transport.ListKind) {
	if kind != transport.ListTools {
		b.hooks.emit(Event{Kind: EventListChanged, Backend: b.name, List: kind})
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, b.timeout)
	defer cancel()
	tools, err := tr.ListTools(ctx)
	var schemas map[string]compiledTool
	if err == nil {
		schemas, err = b.compileTools(ctx, tools)
	}
	if err != nil {
		if b.ctx.Err() == nil {
			b.logger.Warn("tools/list after list_changed failed; the previous list stays", "error", err)
		}
		return
	}
	b.mu.Lock()
	b.tools, b.schemas = tools, schemas
	// A removed tool's breaker goes with it (a tool added again later
	// starts closed, as after a restart).
	keep := make(map[string]bool, len(tools))
	for _, t := range tools {
		keep[catalogueName(b.prefix, t.Name)] = true
	}
	for name := range b.toolBr {
		if !keep[name] {
			delete(b.toolBr, name)
		}
	}
	b.mu.Unlock()
	b.logger.Info("tool list changed", "tools", len(tools))
	b.hooks.catalogueChanged()
}

// Restart stops the backend name (if it is running) and starts it again at
// once, resetting its restart count within restart_window and its backoff:
// the way back from StateFailed. It waits for the attempt and returns its
// error (wrapping ErrBackendUnavailable); a failed attempt is retried by
// the restart policy. Errors: ErrUnknownBackend, ErrClosed, ctx's error.
func (h *Host) Restart(ctx context.Context, name string) error {
	return h.ask(ctx, name, func(b *backend) chan chan error { return b.restartReq }, func(err error) error {
		if err != nil {
			return fmt.Errorf("%w: restarting %q: %w", ErrBackendUnavailable, name, err)
		}
		return nil
	})
}

// ask sends a request to backend name's supervisor on the channel req
// picks, waits for the supervisor's reply and returns it, through wrap if
// that is set. Its own errors: ErrUnknownBackend, ErrClosed, ctx's error.
func (h *Host) ask(ctx context.Context, name string, req func(*backend) chan chan error, wrap func(error) error) error {
	b := h.named(name)
	if b == nil {
		return fmt.Errorf("%w: %q: backends are the [servers.NAME] and [plugins.NAME] tables of the configuration", ErrUnknownBackend, name)
	}
	reply := make(chan error, 1)
	select {
	case req(b) <- reply:
	case <-h.stop:
		return ErrClosed
	case <-b.exited:
		return b.goneErr()
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		if wrap != nil {
			return wrap(err)
		}
		return err
	case <-h.stop:
		return ErrClosed
	case <-b.exited:
		return b.goneErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}
