package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
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
	StateDisabled   State = "disabled"   // stopped by Host.Disable (Host.Enable starts it), or enabled = false in its table (never started)
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
	// timeoutFrom says where timeout comes from (timeoutOwn, timeoutHost,
	// timeoutDefault), for the error of a call whose deadline passed.
	timeoutFrom int
	// deadlineErr is the cause of a call bounded by timeout (bound), made
	// at its first call.
	deadlineErr atomic.Pointer[DeadlineError]
	logger      hclog.Logger
	sv          config.Supervision
	// newTr builds a fresh, unconnected transport; onChange receives its
	// list_changed notifications.
	newTr func(onChange func(transport.ListKind)) transport.Transport

	// From the configuration: tools and deny_tools, and the cap on a
	// result's JSON encoding that the host checks (servers only: the
	// sandbox enforces a plugin's own).
	allow, deny []config.Rule
	maxOutput   int
	// sandbox is a sandboxed stdio server's native sandbox (nil: none).
	sandbox *serverSandbox

	hooks      hooks
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
	source      string              // an OCI plugin's last resolution (ociplugin.Result.Status)
}

type listChange struct {
	gen  uint64
	kind transport.ListKind
}

// hooks is what a backend needs of the Host that runs it; the backend
// holds no pointer to the Host.
type hooks struct {
	emit             func(Event)     // Host.emit
	catalogueChanged func()          // rebuild the catalogue after b's tools or state changed
	spawn            func(func())    // run f on a goroutine that Host.Close waits for
	stop             <-chan struct{} // closed by Host.Close
	startupTimeout   time.Duration   // Options.StartupTimeout; 0: the backend's startup_timeout
	breakers         *breakerShare   // breaker state in the store (breaker_store.go); nil: memory only
	compileOnDemand  bool            // Options.CompileOnDemand
}

// hooks returns the hooks of h's backends.
func (h *Host) hooks() hooks {
	return hooks{emit: h.emit, catalogueChanged: h.catalogueChanged, spawn: h.spawn, stop: h.stop, startupTimeout: h.opts.StartupTimeout, breakers: h.brShare,
		compileOnDemand: h.opts.CompileOnDemand}
}

// spawn runs f on a goroutine that Close waits for.
func (h *Host) spawn(f func()) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		f()
	}()
}

// every runs f every d on a goroutine of the host's (spawn) until the host
// closes (h.stop); the first run is after d.
func (h *Host) every(d time.Duration, f func()) {
	h.spawn(func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
				f()
			}
		}
	})
}

func (h *Host) newBackend(name, kind, prefix string, timeout time.Duration, sv config.Supervision) *backend {
	b := &backend{hooks: h.hooks(), name: name, kind: kind, prefix: prefix, timeout: timeout, logger: h.backendLogger(name), sv: sv,
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
func (b *backend) setState(state State, err error) {
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
	b.hooks.emit(Event{Kind: EventState, Backend: b.name, State: state, Err: err})
}

// conn returns b's transport for one operation once b is ready: it starts
// an idle backend and waits out a start or a restart, within ctx (which
// carries the op's deadline: see deadlineLayer). Every
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
		state, wake := b.state, b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			// A backend ready just now keeps the state waited on.
			now, why := b.waitedFor()
			if now != StateReady {
				state = now
			}
			return nil, 0, fmt.Errorf("%w: backend %q still %s when the call's deadline came%s: %w", ErrBackendUnavailable, b.name, state, why, ctxErr(ctx))
		}
	}
}

// waitedFor is b's state and what a call whose deadline came while it
// waited on b says of it: " (last error: …)" and, restarting, "; its next
// start attempt is in …" (a gateway's client, or a model, reads this). It
// reads b now, not when the wait began: a lost connection is detached
// (restarting) before its supervisor sets the next attempt, and that second
// restarting wakes no waiter (setState).
func (b *backend) waitedFor() (State, string) {
	b.mu.Lock()
	state, lastErr, next := b.state, b.lastErr, b.next
	b.mu.Unlock()
	why := ""
	if lastErr != nil {
		why = fmt.Sprintf(" (last error: %v)", lastErr)
	}
	if state == StateRestarting && !next.IsZero() {
		why += fmt.Sprintf("; its next start attempt is in %s", max(0, time.Until(next)).Round(time.Millisecond))
	}
	return state, why
}

// ctxErr is ctx's error in the host's terms: a passed deadline is a
// *DeadlineError (ErrTimeout and context.DeadlineExceeded) naming it.
func ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return deadlineOf(ctx)
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
	if err != nil && errors.Is(err, transport.ErrClosed) && b.state == StateClosed &&
		(errors.Is(b.lastErr, ErrBackendRemoved) || errors.Is(b.lastErr, ErrBackendDisabled)) {
		// Its transport was closed under it because the backend was
		// removed, replaced or disabled (Host.Apply, Remove, Disable):
		// say so, not just "transport closed".
		err = fmt.Errorf("%w (the call was in flight: %w)", b.lastErr, err)
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
	case errors.Is(err, transport.ErrFault):
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
	if tr := b.detach(gen, lost); tr != nil {
		b.closeAsync(tr)
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
func (b *backend) detach(gen uint64, err error) transport.Transport {
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
	b.next = time.Time{} // not known until the supervisor decides (afterFailure)
	b.mu.Unlock()
	b.logger.Error("backend lost", "error", err)
	b.setState(StateRestarting, err)
	return tr
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
func (b *backend) newBreaker(tool string) *breaker {
	name, key := b.name, backendKey(b.name)
	if tool != "" {
		name, key = tool, toolKey(b.name, tool)
	}
	return newBreaker(name, b.sv.CircuitBreaker, b.hooks.breakers, key, func(from, to string) {
		b.logger.Warn("circuit breaker", "tool", tool, "from", from, "to", to)
		b.hooks.emit(Event{Kind: EventCircuit, Backend: b.name, Tool: tool, Circuit: to})
	})
}

// breakers returns b's breaker and tool's (created on first use).
func (b *backend) breakers(tool string) (*breaker, *breaker) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.br == nil {
		// Not started yet: breakers come with the first connection, but
		// a call may be waiting for it.
		b.br = b.newBreaker("")
		b.toolBr = map[string]*breaker{}
	}
	tb := b.toolBr[tool]
	if tb == nil {
		tb = b.newBreaker(tool)
		b.toolBr[tool] = tb
	}
	return b.br, tb
}

// listed reports whether b's tools are listed: not once it has failed (its
// tools then stay callable, failing with ErrBackendUnavailable).
func (b *backend) listed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state != StateFailed && b.state != StateClosed && b.state != StateDisabled && b.state != StateNeedsLogin
}

// down reports whether b is down for a profile's requires: failed, or
// waiting to be restarted. (Idle and starting backends are on their way.)
func (b *backend) down() (bool, error) {
	if b == nil {
		return true, ErrBackendRemoved
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == StateFailed || b.state == StateRestarting || b.state == StateNeedsLogin {
		if b.lastErr == nil {
			return true, fmt.Errorf("backend %s", b.state)
		}
		return true, b.lastErr
	}
	return false, nil
}
