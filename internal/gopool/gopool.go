// Package gopool runs functions on goroutines that it keeps for reuse.
//
// A goroutine starts with a small stack (8 KiB, or the runtime's running
// average: runtime/stack.go, GODEBUG adaptivestackstart) and grows it by
// copying, twice the size each time, as its calls go deeper. A call served
// through the gateway and the host's pipeline goes deep (the layers of
// host/pipeline.go, encoding/json, the JSON Schema validator, the
// transport's codec), so a new goroutine per call pays several stack
// copies per call, each walking every frame on the stack (measured: 9% of
// the gateway child's CPU in runtime.copystack; docs/BENCHMARKS.md, "Stack
// growth"). A goroutine of a Pool keeps its grown stack between functions:
// the garbage collector halves an idle goroutine's stack when it uses a
// quarter of it, so a worker parked across a GC cycle grows again once,
// not once per call.
//
// A Pool keeps at most its maxIdle goroutines parked; a function given
// when none is parked gets a new goroutine, which parks after it if there
// is room. Close ends the parked ones; a goroutine running a function ends
// when the function returns.
package gopool

import (
	"sync"
	"sync/atomic"
)

// Pool is a set of reusable goroutines. Its zero value is not usable: see
// New. Its methods are safe for concurrent use.
type Pool struct {
	work    chan func() // unbuffered: a send succeeds only to a parked worker
	done    chan struct{}
	maxIdle int32
	idle    atomic.Int32

	mu     sync.Mutex
	closed bool
	parked sync.WaitGroup // the workers between functions (Add under mu, while !closed)
}

// New returns a Pool that keeps at most maxIdle goroutines parked (at
// least 1).
func New(maxIdle int) *Pool {
	if maxIdle < 1 {
		maxIdle = 1
	}
	return &Pool{work: make(chan func()), done: make(chan struct{}), maxIdle: int32(maxIdle)}
}

// Go runs f on a parked goroutine of p, or on a new one when none is
// parked (also after Close, when f then runs on a goroutine that ends with
// it). It does not wait for f.
func (p *Pool) Go(f func()) {
	select {
	case p.work <- f:
	default:
		go p.worker(f)
	}
}

func (p *Pool) worker(f func()) {
	for {
		f()
		f = nil // not kept alive while parked
		if !p.park() {
			return
		}
		select {
		case f = <-p.work:
			p.idle.Add(-1)
			p.parked.Done()
		case <-p.done:
			p.idle.Add(-1)
			p.parked.Done()
			return
		}
	}
}

// park counts the calling worker as parked, or reports false when it must
// end instead (the pool is full of parked workers, or closed). Under mu, so
// that Idle never counts a worker that will not park, and Close waits for
// every worker it counts.
func (p *Pool) park() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.idle.Load() >= p.maxIdle {
		return false
	}
	p.idle.Add(1)
	p.parked.Add(1)
	return true
}

// Close ends the parked goroutines and returns once they have; a goroutine
// running a function ends when it returns. Close is idempotent.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.done)
	p.mu.Unlock()
	p.parked.Wait()
}

// Idle is the number of goroutines parked now.
func (p *Pool) Idle() int { return int(p.idle.Load()) }
