package handoff_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/handoff"
)

// A duty kept is never given, not even when its watch's delay passes
// later.
func TestKeep(t *testing.T) {
	w := handoff.NewWatch(time.Millisecond)
	defer w.Stop()
	var gave atomic.Int32
	d := w.Hold(func() { gave.Add(1) })
	if !d.Keep() {
		t.Fatal("Keep of a held duty = false")
	}
	d.Give()
	handoff.Give(handoff.With(context.Background(), d))
	time.Sleep(20 * time.Millisecond) // many ticks: none may give it
	if n := gave.Load(); n != 0 {
		t.Fatalf("a kept duty was given %d times", n)
	}
}

type otherKey struct{}

// Give through the context gives it once; Keep then reports it given.
func TestGiveThroughContext(t *testing.T) {
	w := handoff.NewWatch(time.Hour)
	defer w.Stop()
	gave := make(chan struct{}, 2)
	d := w.Hold(func() { gave <- struct{}{} })
	ctx := handoff.With(context.WithValue(context.Background(), otherKey{}, 1), d)
	handoff.Give(ctx)
	handoff.Give(ctx)
	if d.Keep() {
		t.Fatal("Keep of a given duty = true")
	}
	if len(gave) != 1 {
		t.Fatalf("given %d times, want 1", len(gave))
	}
	handoff.Give(context.Background()) // no duty: nothing to do
}

// A duty neither given nor kept is given by the watch once its delay has
// passed — also after the watch's timer stopped for want of duties — once,
// however Give, Keep and the watch race.
func TestWatchGives(t *testing.T) {
	w := handoff.NewWatch(100 * time.Microsecond)
	defer w.Stop()
	for round := range 3 {
		gave := make(chan struct{})
		w.Hold(func() { close(gave) }) // a second give panics
		<-gave
		if round < 2 {
			// Idle long enough for the timer to stop: the next Hold
			// must start it again.
			time.Sleep(20 * time.Millisecond)
		}
	}
	for range 300 {
		var n atomic.Int32
		done := make(chan struct{})
		d := w.Hold(func() { n.Add(1); close(done) })
		var wg sync.WaitGroup
		kept := make(chan bool, 1)
		wg.Add(2)
		go func() { defer wg.Done(); d.Give() }()
		go func() { defer wg.Done(); kept <- d.Keep() }()
		wg.Wait()
		if <-kept {
			// Keep won: no give began, and none can begin now.
			if n.Load() != 0 {
				t.Fatal("a kept duty was given")
			}
			continue
		}
		<-done // Give or the watch won: give ran (once: a second would panic)
	}
}

// A stopped watch gives nothing.
func TestWatchStop(t *testing.T) {
	w := handoff.NewWatch(100 * time.Microsecond)
	w.Stop()
	var gave atomic.Int32
	w.Hold(func() { gave.Add(1) })
	time.Sleep(20 * time.Millisecond)
	if gave.Load() != 0 {
		t.Fatal("a stopped watch gave a duty")
	}
}
