package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/transport"
)

// State is a backend's lifecycle state.
type State string

// Backend states. A backend moves idle/starting → ready; when it is lost
// (crash, broken connection, failed health checks, a plugin that keeps
// trapping) or a start fails, it is restarting until its next attempt, and
// failed once max_restarts within restart_window are used up, or at once
// when a plugin's start failure cannot heal (see cannotHeal).
const (
	StateIdle       State = "idle"       // not running: lazy and not used yet, or stopped by idle_timeout; the next use starts it
	StateStarting   State = "starting"   // an attempt to start is in progress
	StateReady      State = "ready"      // connected; calls go through
	StateRestarting State = "restarting" // waiting out the restart backoff; see NextRestart and LastError
	StateFailed     State = "failed"     // given up until Host.Restart; see LastError
	StateClosed     State = "closed"     // the Host was closed, or the backend removed (Host.Apply, Host.Remove)
	StateDisabled   State = "disabled"   // stopped by Host.Disable, its configuration kept; Host.Enable starts it
	// StateNeedsLogin: an OAuth server that wants a token toolhost does not
	// have (transport.ErrNeedsLogin); not restarted: after `toolhost login
	// NAME`, Host.Restart (or a new toolhost) starts it. See LastError.
	StateNeedsLogin State = "needs_login"
)

// backend is one configured server or plugin and its supervision state.
// Every state transition but Close's is made by the backend's supervisor
// goroutine (supervise); calls only read the state and report faults.
type backend struct {
	name    string
	kind    string
	prefix  string
	timeout time.Duration
	logger  hclog.Logger
	sv      config.Supervision
	// newTr builds a fresh, unconnected transport; onChange receives its
	// list_changed notifications.
	newTr func(onChange func(transport.ListKind)) transport.Transport

	// From the configuration: tools and deny_tools, and the cap on a
	// result's JSON encoding that the host checks (servers only: the
	// sandbox enforces a plugin's own).
	allow, deny []config.Rule
	maxOutput   int

	h          *Host
	startReq   chan struct{}   // buffered 1: start an idle backend
	lostSig    chan struct{}   // buffered 1: a call detached a lost connection (see lost)
	checkNow   chan struct{}   // buffered 1: a call timed out; check health now
	restartReq chan chan error // Host.Restart
	healthReq  chan chan error // Host.CheckHealth
	changed    chan listChange // buffered: a list_changed notification
	firstDone  chan struct{}   // closed when the first attempt (eager) has ended
	firstOnce  sync.Once
	bo         *backoff.ExponentialBackOff // restart delays; supervisor only

	ctx    context.Context    // the supervisor's; cancelled by Close, Apply, Remove and Disable
	cancel context.CancelFunc // cancels ctx
	exited chan struct{}      // closed when the supervisor has returned

	mu          sync.Mutex
	tr          transport.Transport // nil unless ready
	gen         uint64              // incremented per attempt; tags faults
	state       State
	since       time.Time
	started     time.Time // when the current connection became ready
	lastErr     error
	init        *mcp.InitializeResult
	tools       []*mcp.Tool
	schemas     map[string]compiledTool // tools' compiled schemas, by the backend's own tool name
	known       bool                    // tools is the list of a successful start
	rewritten   map[string]bool         // tool names whose rewrite was logged since the last start
	slowStart   bool                    // the last attempt failed because startup_timeout came
	restarts    int
	recent      []time.Time // restart attempts within restart_window
	next        time.Time   // the next attempt, while restarting
	healthAt    time.Time
	healthFails int
	healthErr   error
	traps       int    // consecutive calls that trapped (plugins)
	lost        error  // set by a call that detached the connection; the supervisor schedules the restart
	detachedGen uint64 // the last connection taken down after a loss, and why
	detachedErr error
	inflight    int
	lastUsed    time.Time
	wake        chan struct{} // closed and replaced on every state change
	br          *breaker
	toolBr      map[string]*breaker // by catalogue name
}

type listChange struct {
	gen  uint64
	kind transport.ListKind
}

func (h *Host) newBackend(name, kind, prefix string, timeout time.Duration, sv config.Supervision) *backend {
	b := &backend{h: h, name: name, kind: kind, prefix: prefix, timeout: timeout, logger: h.logger.Named(name), sv: sv,
		startReq: make(chan struct{}, 1), lostSig: make(chan struct{}, 1), checkNow: make(chan struct{}, 1), restartReq: make(chan chan error),
		healthReq: make(chan chan error),
		changed:   make(chan listChange, 8), firstDone: make(chan struct{}),
		state: StateStarting, since: time.Now(), wake: make(chan struct{}), exited: make(chan struct{})}
	b.ctx, b.cancel = context.WithCancel(h.ctx)
	if sv.Start == config.StartLazy {
		b.state = StateIdle
	}
	b.bo = &backoff.ExponentialBackOff{
		InitialInterval:     sv.RestartBackoff.Min.Std(),
		RandomizationFactor: 0.5,
		Multiplier:          2,
		MaxInterval:         sv.RestartBackoff.Max.Std(),
	}
	b.bo.Reset()
	return b
}

// ready reports whether b is ready, and its last error.
func (b *backend) ready() (bool, error) {
	if b == nil {
		return false, ErrBackendRemoved
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == StateReady, b.lastErr
}

// setState moves b to state (err, when not nil, becomes LastError) and
// emits an EventState. It never leaves StateClosed.
func (h *Host) setState(b *backend, state State, err error) {
	b.mu.Lock()
	if b.state == StateClosed || (b.state == state && (err == nil || err == b.lastErr)) {
		b.mu.Unlock()
		return
	}
	b.state, b.since = state, time.Now()
	if err != nil {
		b.lastErr = err
	}
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
	h.emit(Event{Kind: EventState, Backend: b.name, State: state, Err: err})
}

// conn returns b's transport for one operation once b is ready: it starts
// an idle backend and waits out a start or a restart, within ctx. Every
// successful conn must be paired with release. Errors: ErrBackendUnavailable
// (failed, or still not ready when ctx ended; then also ctx's error), ErrClosed.
func (b *backend) conn(ctx context.Context) (transport.Transport, uint64, error) {
	for {
		b.mu.Lock()
		switch {
		case b.state == StateReady && b.tr == nil:
			// A connection just detached (lost, idle, restarting, closing):
			// its new state follows at once; wait for it.
		case b.state == StateReady:
			b.inflight++
			tr, gen := b.tr, b.gen
			b.mu.Unlock()
			return tr, gen, nil
		case b.state == StateFailed:
			err := b.lastErr
			b.mu.Unlock()
			return nil, 0, fmt.Errorf("%w: backend %q has failed; its tools are unavailable until it is restarted: %w", ErrBackendUnavailable, b.name, err)
		case b.state == StateNeedsLogin:
			err := b.lastErr
			b.mu.Unlock()
			return nil, 0, fmt.Errorf("%w: backend %q needs an OAuth login: %w", ErrBackendUnavailable, b.name, err)
		case b.state == StateDisabled || (b.state == StateClosed && (errors.Is(b.lastErr, ErrBackendRemoved) || errors.Is(b.lastErr, ErrBackendDisabled))):
			err := b.lastErr
			b.mu.Unlock()
			return nil, 0, fmt.Errorf("%w: backend %q: %w", ErrBackendUnavailable, b.name, err)
		case b.state == StateClosed:
			b.mu.Unlock()
			return nil, 0, ErrClosed
		case b.state == StateIdle:
			select {
			case b.startReq <- struct{}{}:
			default:
			}
		}
		state, wake, lastErr, next := b.state, b.wake, b.lastErr, b.next
		b.mu.Unlock()
		if _, ok := ctx.Deadline(); !ok {
			// (A plugin call has no host deadline: the sandbox applies the
			// timeout to the call itself. Waiting is bounded by it too.)
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, b.timeout)
			defer cancel()
		}
		select {
		case <-wake:
		case <-ctx.Done():
			why := ""
			if lastErr != nil {
				why = fmt.Sprintf(" (last error: %v)", lastErr)
			}
			if state == StateRestarting && !next.IsZero() {
				// Say when it is worth trying again (a gateway's client,
				// or a model, reads this).
				why += fmt.Sprintf("; its next start attempt is in %s", max(0, time.Until(next)).Round(time.Millisecond))
			}
			return nil, 0, fmt.Errorf("%w: backend %q still %s when the call's deadline came%s: %w", ErrBackendUnavailable, b.name, state, why, ctxErr(ctx))
		}
	}
}

// ctxErr is ctx's error in the host's terms: a passed deadline also wraps
// ErrTimeout.
func ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w (%w)", ErrTimeout, ctx.Err())
	}
	return ctx.Err()
}

// release ends an operation begun with conn; err is its outcome. A lost
// connection or a protocol violation is reported to the supervisor, and so
// is a plugin that trapped on health_threshold consecutive calls. It returns
// err, or for an operation that was in flight on a connection taken down
// after a loss (and so failed with transport.ErrClosed), that loss.
func (b *backend) release(gen uint64, err error) error {
	b.mu.Lock()
	b.inflight--
	b.lastUsed = time.Now()
	if err != nil && gen == b.detachedGen && errors.Is(err, transport.ErrClosed) && !errors.Is(err, transport.ErrNotSent) {
		err = fmt.Errorf("in flight when the connection was lost: %w", b.detachedErr)
	}
	var lost error
	switch {
	case err == nil:
		b.traps = 0
	case errors.Is(err, transport.ErrConnectionLost) || errors.Is(err, transport.ErrProtocol) || errors.Is(err, transport.ErrNeedsLogin):
		// (A server that stopped taking the token needs a login: the
		// supervisor sets needs_login.)
		lost = err
	case errors.Is(err, transport.ErrTimeout) && b.sv.HealthCheck != config.HealthNone:
		// A server that stopped answering: find out now rather than at
		// the next health_interval.
		select {
		case b.checkNow <- struct{}{}:
		default:
		}
	case errors.Is(err, sandbox.ErrTrap) || errors.Is(err, sandbox.ErrMemoryLimit):
		b.traps++
		if b.traps >= b.sv.HealthThreshold {
			lost = fmt.Errorf("%d consecutive calls trapped, the last: %w", b.traps, err)
		}
	}
	b.mu.Unlock()
	if lost == nil {
		return err
	}
	// Take the connection out of service now, so the next call waits for
	// the restart instead of meeting the dead connection; the supervisor
	// schedules the restart.
	if tr := b.h.detach(b, gen, lost); tr != nil {
		b.h.closeAsync(tr)
		b.mu.Lock()
		b.lost = lost
		b.mu.Unlock()
		select {
		case b.lostSig <- struct{}{}:
		default:
		}
	}
	return err
}

// detach takes b's connection gen out of service (b becomes restarting
// with err) and returns its transport, or nil when gen is no longer b's
// ready connection (another caller or the supervisor got there first).
func (h *Host) detach(b *backend, gen uint64, err error) transport.Transport {
	b.mu.Lock()
	// b.tr == nil: another loss of this connection (the call that saw it,
	// and the watcher that saw the process exit) got here first and owns
	// the restart decision; a second detach would set restarting after
	// that decision, even over failed.
	if b.gen != gen || b.state != StateReady || b.tr == nil {
		b.mu.Unlock()
		return nil
	}
	tr := b.tr
	b.tr = nil
	b.detachedGen, b.detachedErr = gen, err
	b.mu.Unlock()
	b.logger.Error("backend lost", "error", err)
	h.setState(b, StateRestarting, err)
	return tr
}

// supervise runs b's lifecycle until the host closes: the first start,
// restarts with backoff, health checks, idle stops, list changes and
// explicit restarts. It is the only goroutine that starts or stops b.
func (h *Host) supervise(b *backend) {
	defer h.wg.Done()
	defer close(b.exited)
	var retry <-chan time.Time
	if b.sv.Start == config.StartEager {
		if err := h.attempt(b); err != nil {
			retry = h.afterFailure(b, err)
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
		case <-h.stop:
			return
		case <-b.ctx.Done():
			return
		case <-b.startReq:
			if state == StateIdle {
				if err := h.attempt(b); err != nil {
					retry = h.afterFailure(b, err)
				}
			}
		case <-b.lostSig:
			b.mu.Lock()
			err := b.lost
			b.lost = nil
			b.mu.Unlock()
			if err != nil && retry == nil {
				retry = h.afterFailure(b, err)
			}
		case <-done:
			retry = h.lose(b, gen, explainLost(tr))
		case <-b.checkNow:
			if state == StateReady {
				if _, err := h.checkHealth(b, tr); err != nil {
					retry = h.lose(b, gen, err)
				}
			}
		case <-health:
			if state == StateReady {
				if _, err := h.checkHealth(b, tr); err != nil {
					retry = h.lose(b, gen, err)
				}
			}
		case reply := <-b.healthReq:
			if state != StateReady {
				reply <- fmt.Errorf("%w: %q is %s", ErrBackendUnavailable, b.name, state)
				break
			}
			checkErr, err := h.checkHealth(b, tr)
			if err != nil {
				retry = h.lose(b, gen, err)
			}
			reply <- checkErr
		case <-idle:
			h.stopIfIdle(b)
		case <-retry:
			retry = nil
			b.mu.Lock()
			b.restarts++
			b.recent = append(b.recent, time.Now())
			b.mu.Unlock()
			if err := h.attempt(b); err != nil {
				retry = h.afterFailure(b, err)
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
				h.closeAsync(old)
			}
			b.bo.Reset()
			err := h.attempt(b)
			if err != nil {
				retry = h.afterFailure(b, err)
			}
			reply <- err
		case c := <-b.changed:
			if c.gen == gen && state == StateReady {
				h.listChanged(b, tr, c.kind)
			}
		}
	}
}

// startupTimeout is b's startup_timeout, unless Options.StartupTimeout
// overrides it.
func (h *Host) startupTimeout(b *backend) time.Duration {
	if h.opts.StartupTimeout > 0 {
		return h.opts.StartupTimeout
	}
	return b.sv.StartupTimeout.Std()
}

// attempt makes one attempt to start b: a fresh transport, Connect and the
// first tools/list, within startup_timeout. On success b is ready with a
// fresh pair of circuit breakers and the catalogue is rebuilt.
func (h *Host) attempt(b *backend) error {
	b.mu.Lock()
	b.gen++
	gen := b.gen
	b.mu.Unlock()
	h.setState(b, StateStarting, nil)
	tr := b.newTr(func(k transport.ListKind) {
		select {
		case b.changed <- listChange{gen, k}:
		default:
		}
	})
	limit := h.startupTimeout(b)
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
		schemas, err = compileTools(ctx, b.prefix, tools)
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
	b.br = h.newBreaker(b, "")
	b.toolBr = map[string]*breaker{}
	b.mu.Unlock()
	b.bo.Reset()
	b.logger.Info("backend ready", "tools", len(tools), "elapsed", time.Since(t0).Round(time.Millisecond))
	// The catalogue first, so that whoever sees the state ready (a lazy
	// start's waiter) finds the tools.
	h.catalogueChanged()
	h.setState(b, StateReady, nil)
	return nil
}

// firstRewrite reports whether the rewrite of tool's name is to be logged:
// once per name per start (the catalogue is rebuilt on every change of any
// backend).
func (b *backend) firstRewrite(tool string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rewritten[tool] {
		return false
	}
	if b.rewritten == nil {
		b.rewritten = map[string]bool{}
	}
	b.rewritten[tool] = true
	return true
}

// newBreaker makes a breaker for b (tool "") or one of its tools, which
// emits an EventCircuit on every change.
func (h *Host) newBreaker(b *backend, tool string) *breaker {
	name := b.name
	if tool != "" {
		name = tool
	}
	return newBreaker(name, b.sv.CircuitBreaker, func(from, to string) {
		b.logger.Warn("circuit breaker", "tool", tool, "from", from, "to", to)
		h.emit(Event{Kind: EventCircuit, Backend: b.name, Tool: tool, Circuit: to})
	})
}

// breakers returns b's breaker and tool's (created on first use).
func (b *backend) breakers(h *Host, tool string) (*breaker, *breaker) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.br == nil {
		// Not started yet: breakers come with the first connection, but
		// a call may be waiting for it.
		b.br = h.newBreaker(b, "")
		b.toolBr = map[string]*breaker{}
	}
	tb := b.toolBr[tool]
	if tb == nil {
		tb = h.newBreaker(b, tool)
		b.toolBr[tool] = tb
	}
	return b.br, tb
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
func (h *Host) lose(b *backend, gen uint64, err error) <-chan time.Time {
	tr := h.detach(b, gen, err)
	if tr == nil {
		return nil
	}
	h.closeAsync(tr)
	return h.afterFailure(b, err)
}

// afterFailure decides what follows a lost backend or a failed start: a
// restart after the backoff, or failed when max_restarts attempts were
// already made within restart_window.
func (h *Host) afterFailure(b *backend, err error) <-chan time.Time {
	if b.ctx.Err() != nil {
		return nil
	}
	if errors.Is(err, transport.ErrNeedsLogin) {
		// Restarting cannot help until someone logs in.
		b.logger.Error("backend needs an OAuth login; not restarted", "server", b.name)
		h.setState(b, StateNeedsLogin, err)
		h.catalogueChanged()
		return nil
	}
	if why := cannotHeal(b, err); why != "" {
		b.logger.Error("backend failed", "reason", why)
		h.setState(b, StateFailed, fmt.Errorf("%w; not restarted: %s; Host.Restart starts it again", err, why))
		h.catalogueChanged()
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
		h.setState(b, StateFailed, fmt.Errorf("%w; %s: Host.Restart starts it again", err, why))
		h.catalogueChanged()
		return nil
	}
	d := b.bo.NextBackOff()
	b.mu.Lock()
	b.next = now.Add(d)
	b.mu.Unlock()
	b.logger.Info("restarting after backoff", "delay", d.Round(time.Millisecond))
	h.setState(b, StateRestarting, err)
	return time.After(d)
}

// cannotHeal says why err, a failure of plugin b, cannot go away by
// restarting it ("" if it can): the module file is missing or does not match
// its sha256 pin (transport.ErrStart), its ABI is unsupported
// (sandbox.ErrABI), or its memory cap is below what it needs to start
// (sandbox.ErrMemoryLimit with transport.ErrInitialize). Such a backend goes
// straight to StateFailed instead of restarting with backoff: only a change
// of the file or the configuration, then Host.Restart, can make it start.
// A server's start failures are always retried (a command may be installed,
// a URL may come up).
func cannotHeal(b *backend, err error) string {
	if b.kind != KindPlugin {
		return ""
	}
	switch {
	case errors.Is(err, transport.ErrStart) && errors.Is(err, fs.ErrNotExist):
		return "the module file does not exist"
	case errors.Is(err, sandbox.ErrChecksum):
		return "the module file does not match its sha256 pin"
	case errors.Is(err, sandbox.ErrABI):
		return "the module is not a plugin of a supported ABI"
	case errors.Is(err, sandbox.ErrMemoryLimit) && errors.Is(err, transport.ErrInitialize):
		return "its memory cap is below what the module needs to start"
	}
	return ""
}

// closeAsync closes a transport the backend no longer uses without holding
// up its supervisor (a stubborn child takes the whole shutdown escalation).
// Host.Close waits for it.
func (h *Host) closeAsync(tr transport.Transport) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		tr.Close()
	}()
}

// checkHealth runs one health check of b. checkErr is the check's own
// failure; lost wraps ErrUnhealthy once health_threshold consecutive checks
// have failed (the caller then takes the connection down).
func (h *Host) checkHealth(b *backend, tr transport.Transport) (checkErr, lost error) {
	if b.sv.HealthCheck == config.HealthNone {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(b.ctx, b.sv.HealthTimeout.Std())
	defer cancel()
	var err error
	switch b.sv.HealthCheck {
	case config.HealthPing:
		err = tr.Ping(ctx)
	case config.HealthTool:
		var res *mcp.CallToolResult
		args := b.sv.HealthArgs
		if args == nil {
			args = map[string]any{}
		}
		res, err = tr.CallTool(ctx, &mcp.CallToolParams{Name: b.sv.HealthTool, Arguments: args})
		if err == nil && res.IsError {
			err = fmt.Errorf("health tool %q returned a tool error: %s", b.sv.HealthTool, resultText(res))
		}
	}
	if b.ctx.Err() != nil {
		return ErrClosed, nil
	}
	b.mu.Lock()
	b.healthAt = time.Now()
	was := b.healthFails
	if err != nil {
		b.healthFails++
		b.healthErr = err
	} else {
		b.healthFails, b.healthErr = 0, nil
	}
	n := b.healthFails
	b.mu.Unlock()
	switch {
	case err != nil:
		b.logger.Warn("health check failed", "failures", n, "threshold", b.sv.HealthThreshold, "error", err)
		h.emit(Event{Kind: EventHealth, Backend: b.name, Err: err})
		if n >= b.sv.HealthThreshold {
			return err, fmt.Errorf("%w: %d consecutive health checks failed, the last: %w", ErrUnhealthy, n, err)
		}
	case was > 0:
		h.emit(Event{Kind: EventHealth, Backend: b.name})
	}
	return err, nil
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return clip(strings.Join(parts, " "), 200)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// stopIfIdle stops a stdio server that has had no call for idle_timeout.
func (h *Host) stopIfIdle(b *backend) {
	b.mu.Lock()
	if b.state != StateReady || b.inflight > 0 || time.Since(b.lastUsed) < b.sv.IdleTimeout.Std() {
		b.mu.Unlock()
		return
	}
	tr := b.tr
	b.tr = nil
	b.mu.Unlock()
	b.logger.Info("stopping after idle_timeout", "idle_timeout", b.sv.IdleTimeout)
	h.setState(b, StateIdle, nil)
	h.closeAsync(tr)
}

// listChanged handles a list_changed notification of a ready backend.
func (h *Host) listChanged(b *backend, tr transport.Transport, kind transport.ListKind) {
	if kind != transport.ListTools {
		h.emit(Event{Kind: EventListChanged, Backend: b.name, List: kind})
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, b.timeout)
	defer cancel()
	tools, err := tr.ListTools(ctx)
	var schemas map[string]compiledTool
	if err == nil {
		schemas, err = compileTools(ctx, b.prefix, tools)
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
	h.catalogueChanged()
}

// catalogueChanged rebuilds the catalogue after a backend's tools or state
// changed and emits an EventCatalogue with the names added and removed.
func (h *Host) catalogueChanged() {
	h.rebuildMu.Lock()
	defer h.rebuildMu.Unlock()
	before := h.visibleNames()
	if err := h.rebuild(false); err != nil {
		h.logger.Error("catalogue", "error", err)
	}
	after := h.visibleNames()
	var added, removed []string
	for _, n := range after {
		if _, ok := slices.BinarySearch(before, n); !ok {
			added = append(added, n)
		}
	}
	for _, n := range before {
		if _, ok := slices.BinarySearch(after, n); !ok {
			removed = append(removed, n)
		}
	}
	if len(added)+len(removed) > 0 {
		h.emit(Event{Kind: EventCatalogue, Added: added, Removed: removed})
	}
}

// visibleNames is the sorted catalogue names whose backend has not failed.
func (h *Host) visibleNames() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []string
	for _, n := range h.names {
		if h.tools[n].b.listed() {
			out = append(out, n)
		}
	}
	return out
}

// listed reports whether b's tools are listed: not once it has failed (its
// tools then stay callable, failing with ErrBackendUnavailable).
func (b *backend) listed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state != StateFailed && b.state != StateClosed && b.state != StateDisabled && b.state != StateNeedsLogin
}

// ensureStarted starts every lazy backend that has never started and waits
// (within ctx) until each is ready or has failed its attempt, so its tools
// are known.
func (h *Host) ensureStarted(ctx context.Context) {
	var waiting []*backend
	for _, b := range h.all() {
		b.mu.Lock()
		if !b.known && (b.state == StateIdle || b.state == StateStarting) {
			waiting = append(waiting, b)
			if b.state == StateIdle {
				select {
				case b.startReq <- struct{}{}:
				default:
				}
			}
		}
		b.mu.Unlock()
	}
	for _, b := range waiting {
	wait:
		for {
			b.mu.Lock()
			state, wake := b.state, b.wake
			b.mu.Unlock()
			if state != StateIdle && state != StateStarting {
				break
			}
			select {
			case <-wake:
			case <-ctx.Done():
				break wait
			case <-h.stop:
				break wait
			}
		}
	}
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

// CheckHealth runs backend name's configured health check now (an MCP
// ping, or its health_tool call, within health_timeout) on its supervisor
// goroutine, and returns the check's own error, or nil if it passed. The
// result counts like a periodic check: it updates BackendStatus.Health, and
// the health_threshold-th consecutive failure restarts the backend. With
// health_check = "none" it returns nil without contacting the backend.
// Other errors: ErrUnknownBackend; ErrBackendUnavailable when the backend
// is not ready (idle, starting, restarting, failed); ErrClosed; ctx's error.
func (h *Host) CheckHealth(ctx context.Context, name string) error {
	return h.ask(ctx, name, func(b *backend) chan chan error { return b.healthReq }, nil)
}

// Health of a backend, as in BackendStatus.Health.
const (
	HealthOK      = "ok"      // the last check passed
	HealthFailing = "failing" // the last HealthFailures checks failed
	HealthUnknown = "unknown" // not checked since it became ready
	HealthOff     = "off"     // health_check = "none"
)

// BackendStatus is a snapshot of one backend.
type BackendStatus struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"` // "stdio", "http", "wasm" or "custom" (Host.Add)
	State State  `json:"state"`
	// Tools is the number of tools the backend offers (the list of its
	// last start; 0 before its first).
	Tools  int       `json:"tools"`
	Pid    int       `json:"pid,omitempty"`    // the child's process ID (stdio, while running)
	Server string    `json:"server,omitempty"` // serverInfo name and version
	Since  time.Time `json:"since"`            // when State was entered
	// StartedAt is when the current connection became ready, and
	// UptimeSeconds the time since (while ready).
	StartedAt     time.Time `json:"started_at,omitzero"`
	UptimeSeconds float64   `json:"uptime_seconds,omitempty"`
	// Restarts counts restart attempts since the Host was built (by policy
	// and by Host.Restart).
	Restarts int `json:"restarts"`
	// NextRestart is when the next attempt is due (StateRestarting).
	NextRestart time.Time `json:"next_restart,omitzero"`
	// Health is HealthOK, HealthFailing, HealthUnknown or HealthOff;
	// HealthFailures the consecutive failed checks and HealthError the
	// last failure.
	Health         string `json:"health"`
	HealthFailures int    `json:"health_failures,omitempty"`
	HealthError    string `json:"health_error,omitempty"`
	// Circuit is the state of the backend's circuit breaker ("closed",
	// "open", "half-open"); OpenTools the catalogue names of its tools
	// whose own breaker is not closed.
	Circuit   string   `json:"circuit"`
	OpenTools []string `json:"open_tools,omitempty"`
	// StdoutSkipped counts the lines of a stdio server's stdout that were
	// skipped on its current connection: lines that are not JSON (a
	// banner; see strict_stdout) and responses over max_output.
	StdoutSkipped int    `json:"stdout_skipped,omitempty"`
	LastError     string `json:"last_error,omitempty"`
	// Err is the last error itself, for errors.Is (transport.ErrStart,
	// transport.ErrInitialize, ErrUnhealthy, ...).
	Err error `json:"-"`
}

// Status returns a snapshot of every backend, sorted by name.
func (h *Host) Status() []BackendStatus {
	out := make([]BackendStatus, 0, len(h.all()))
	now := time.Now()
	for _, b := range h.all() {
		b.mu.Lock()
		st := BackendStatus{Name: b.name, Kind: b.kind, State: b.state, Since: b.since, Tools: len(b.tools),
			Restarts: b.restarts, Health: HealthUnknown, Circuit: CircuitClosed}
		if b.lastErr != nil {
			st.Err, st.LastError = b.lastErr, b.lastErr.Error()
		}
		if b.init != nil && b.init.ServerInfo != nil {
			st.Server = strings.TrimSpace(b.init.ServerInfo.Name + " " + b.init.ServerInfo.Version)
		}
		switch b.state {
		case StateReady:
			st.StartedAt = b.started
			st.UptimeSeconds = now.Sub(b.started).Round(time.Millisecond).Seconds()
			switch {
			case b.healthFails > 0:
				st.Health, st.HealthFailures = HealthFailing, b.healthFails
			case !b.healthAt.IsZero() && b.healthAt.After(b.started):
				st.Health = HealthOK
			}
		case StateRestarting:
			st.NextRestart = b.next
		}
		if b.healthErr != nil {
			st.HealthError = b.healthErr.Error()
		}
		if b.sv.HealthCheck == config.HealthNone {
			st.Health = HealthOff
		}
		if b.br != nil {
			st.Circuit = b.br.state()
		}
		for name, tb := range b.toolBr {
			if tb.state() != CircuitClosed {
				st.OpenTools = append(st.OpenTools, name)
			}
		}
		tr := b.tr
		b.mu.Unlock()
		sort.Strings(st.OpenTools)
		if p, ok := tr.(interface{ Pid() int }); ok {
			st.Pid = p.Pid()
		}
		if p, ok := tr.(interface{ SkippedLines() int }); ok {
			st.StdoutSkipped = p.SkippedLines()
		}
		out = append(out, st)
	}
	return out
}
