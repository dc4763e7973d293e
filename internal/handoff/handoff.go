// Package handoff lets a goroutine that owns a duty — reading a
// connection's next message — do the work one message asks for itself, and
// give the duty to another goroutine only if that work is about to wait.
//
// The gateway's stdio fast path reads a tools/call and serves it on the
// reading goroutine (no hand-off between the client's line and the
// upstream call). The reading must go on while the call waits for its
// backend: the next line may cancel the call, answer a request it relays,
// or be another call. Handing the reading to a new goroutine before the
// call wakes that goroutine — and on an idle core an OS thread, a futex
// wake — before the call's request is written upstream, on the call's
// critical path. A Duty moves that wake to where the call waits: the
// transport gives the duty (Give) right after it wrote the request, while
// the backend works; a call that ends without waiting (an in-process Wasm
// plugin's, a refusal) keeps it (Keep), and its goroutine reads on with
// no hand-off at all. Every other place a call may wait is covered by the
// connection's Watch, which gives a duty held too long.
package handoff

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

const (
	held = iota
	given
	kept
)

// Duty is a duty its holder may give away once: to the function Hold was
// given, which then runs exactly once (on the giver's goroutine, or on the
// watch's), or not at all if the holder keeps it first.
type Duty struct {
	state atomic.Int32
	give  func()
	at    time.Duration // when it was taken, on its watch's clock
}

// Give gives the duty away (runs give) unless it was given or kept
// already. Safe for concurrent use.
func (d *Duty) Give() {
	if d.state.CompareAndSwap(held, given) {
		d.give()
	}
}

// Keep ends the holder's work: true if the duty is still the holder's
// (never given; it is then never given), false if it was given.
func (d *Duty) Keep() bool {
	return d.state.CompareAndSwap(held, kept)
}

// Watch gives the duties of one connection — held by one goroutine at a
// time, one after another — when one is held longer than its delay. It
// checks on a timer of its own, read by a goroutine of its own, that ticks
// every delay while duties come and stops after idleTicks ticks with none
// held; taking a duty is then an atomic store and an uncontended lock, not
// a timer armed per duty (arming a timer wakes the runtime's network
// poller or an idle thread: a futex wake per call, on the call's path) nor
// a goroutine per tick (time.AfterFunc's).
type Watch struct {
	delay time.Duration
	start time.Time // the watch's clock: time.Since(start), monotonic

	cur atomic.Pointer[Duty] // the last duty taken

	mu      sync.Mutex // guards the fields below and the timer's arming
	timer   *time.Timer
	ticking bool
	idle    int // ticks in a row with no duty held
	stopped bool

	stop chan struct{} // closed by Stop
	done chan struct{} // closed when the goroutine has ended
}

// idleTicks is how many ticks in a row with no duty held stop a watch's
// timer (the next Hold starts it again).
const idleTicks = 16

// NewWatch returns a watch that gives a duty held for more than delay,
// at most about twice delay after it was taken (delay > 0). It runs a
// goroutine until Stop, which its owner must call.
func NewWatch(delay time.Duration) *Watch {
	w := &Watch{delay: delay, start: time.Now(), timer: time.NewTimer(time.Hour),
		stop: make(chan struct{}), done: make(chan struct{})}
	w.timer.Stop()
	go w.run()
	return w
}

// Hold returns a held duty that give takes over, watched by w: if it is
// neither given nor kept within w's delay, w gives it (on its goroutine)
// within about twice the delay.
func (w *Watch) Hold(give func()) *Duty {
	d := &Duty{give: give, at: time.Since(w.start)}
	w.cur.Store(d)
	w.mu.Lock()
	if !w.ticking && !w.stopped {
		w.ticking, w.idle = true, 0
		w.timer.Reset(w.delay)
	}
	w.mu.Unlock()
	return d
}

func (w *Watch) run() {
	defer close(w.done)
	for {
		select {
		case <-w.stop:
			return
		case <-w.timer.C:
			w.tick()
		}
	}
}

// tick gives the current duty if it has been held longer than the delay,
// and arms the next tick unless the watch has been idle long enough.
func (w *Watch) tick() {
	d := w.cur.Load()
	busy := d != nil && d.state.Load() == held
	if busy && time.Since(w.start)-d.at >= w.delay {
		d.Give()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if busy {
		w.idle = 0
	} else if w.idle++; w.idle >= idleTicks {
		// Stop, unless a duty was taken since the load above: Hold
		// stores it before it takes mu, so it is seen here, or Hold
		// sees ticking false and arms the timer itself.
		if d := w.cur.Load(); d == nil || d.state.Load() != held {
			w.ticking = false
			return
		}
		w.idle = 0
	}
	w.timer.Reset(w.delay)
}

// Stop ends w's goroutine and waits for it (a give it is running
// included); duties taken after it are not watched. Idempotent.
func (w *Watch) Stop() {
	w.mu.Lock()
	if !w.stopped {
		w.stopped = true
		w.timer.Stop()
		close(w.stop)
	}
	w.mu.Unlock()
	<-w.done
}

type dutyKey struct{}

// With returns ctx carrying d, for Give(ctx).
func With(ctx context.Context, d *Duty) context.Context {
	return context.WithValue(ctx, dutyKey{}, d)
}

// Give gives the duty ctx carries, if any: a call about to wait calls it
// (the transport, once its request is written).
func Give(ctx context.Context) {
	if d, _ := ctx.Value(dutyKey{}).(*Duty); d != nil {
		d.Give()
	}
}
