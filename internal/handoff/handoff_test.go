package handoff_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/handoff"
)

// A duty kept before its delay is never given, not even when its delay
// passes later.
func TestKeep(t *testing.T) {
	var gave atomic.Int32
	d := handoff.Hold(func() { gave.Add(1) }, 50*time.Millisecond)
	if !d.Keep() {
		t.Fatal("Keep of a held duty = false")
	}
	d.Give()
	handoff.Give(handoff.With(context.Background(), d))
	time.Sleep(100 * time.Millisecond) // past the delay: the timer must be stopped
	if n := gave.Load(); n != 0 {
		t.Fatalf("a kept duty was given %d times", n)
	}
}

type otherKey struct{}

// Give through the context gives it once; Keep then reports it given.
func TestGiveThroughContext(t *testing.T) {
	gave := make(chan struct{}, 2)
	d := handoff.Hold(func() { gave <- struct{}{} }, time.Hour)
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

// A duty neither given nor kept is given when its delay passes, once,
// however Give, Keep and the timer race.
func TestExpires(t *testing.T) {
	gave := make(chan struct{})
	d := handoff.Hold(func() { close(gave) }, time.Microsecond)
	<-gave // the timer gave it (a second give would panic on close)
	if d.Keep() {
		t.Fatal("Keep after the timer gave it = true")
	}
	for range 200 {
		var n atomic.Int32
		done := make(chan struct{})
		d := handoff.Hold(func() { n.Add(1); close(done) }, time.Microsecond) // a second give panics
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
		<-done // Give or the timer won: give ran (once: a second would panic)
	}
}
