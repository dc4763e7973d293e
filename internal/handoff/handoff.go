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
// no hand-off at all. Every other place a call may wait is covered by a
// timer: a duty not given or kept within its delay is given then, so the
// reading is never held longer than that by a call that waits elsewhere.
package handoff

import (
	"context"
	"sync/atomic"
	"time"
)

const (
	held = iota
	given
	kept
)

// Duty is a duty its holder may give away once: to the function Hold was
// given, which then runs exactly once (on its own goroutine, or on the
// timer's), or not at all if the holder keeps it first.
type Duty struct {
	state atomic.Int32
	give  func()
	timer *time.Timer
}

// Hold returns a held duty that give takes over; if it is neither given
// nor kept within after, it is given then (after > 0).
func Hold(give func(), after time.Duration) *Duty {
	d := &Duty{give: give}
	d.timer = time.AfterFunc(after, d.expire)
	return d
}

// expire is the timer's: Give, without touching the timer (it may fire
// before Hold has set d.timer).
func (d *Duty) expire() {
	if d.state.CompareAndSwap(held, given) {
		d.give()
	}
}

// Give gives the duty away (runs give) unless it was given or kept
// already. Safe for concurrent use; it does not wait for give to end
// beyond its own call of it.
func (d *Duty) Give() {
	if d.state.CompareAndSwap(held, given) {
		d.timer.Stop()
		d.give()
	}
}

// Keep ends the holder's work: true if the duty is still the holder's
// (never given; it is then never given), false if it was given.
func (d *Duty) Keep() bool {
	if d.state.CompareAndSwap(held, kept) {
		d.timer.Stop()
		return true
	}
	return false
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
