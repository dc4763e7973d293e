package gopool

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReuse: a function given while a worker is parked runs on that worker,
// not on a new goroutine (the point of the pool: the worker's grown stack).
// A worker counts as parked a moment before it waits for work, and a
// function given in that moment gets a goroutine of its own (which ends
// after it, the pool being full): so the test gives functions until one
// lands on the parked worker, a bounded number of times.
func TestReuse(t *testing.T) {
	p := New(1)
	defer p.Close()
	ids := make(chan uint64, 1)
	p.Go(func() { ids <- goid() })
	first := <-ids
	for range 1000 {
		waitIdle(t, p, 1)
		p.Go(func() { ids <- goid() })
		if <-ids == first {
			return
		}
	}
	t.Errorf("no function given while goroutine %d was parked ran on it", first)
}

// TestMaxIdle: at most maxIdle workers stay parked; the others end.
func TestMaxIdle(t *testing.T) {
	base := runtime.NumGoroutine()
	p := New(2)
	defer p.Close()
	release := make(chan struct{})
	var started sync.WaitGroup
	for range 5 {
		started.Add(1)
		p.Go(func() { started.Done(); <-release })
	}
	started.Wait()
	close(release)
	for end := time.Now().Add(time.Minute); runtime.NumGoroutine() > base+2 || p.Idle() < 2; runtime.Gosched() {
		if time.Now().After(end) {
			t.Fatalf("%d workers parked, %d goroutines beyond the test's %d, a minute after the 5 functions ended; want 2 and 2 (maxIdle)", p.Idle(), runtime.NumGoroutine()-base, base)
		}
	}
	if n := p.Idle(); n != 2 {
		t.Fatalf("%d workers parked once 3 of 5 ended; want 2 (maxIdle)", n)
	}
}

// TestClose ends the parked workers before it returns (goleak checks that
// none is left), lets a running function finish, and a function given
// after Close still runs.
func TestClose(t *testing.T) {
	p := New(4)
	release := make(chan struct{})
	done := make(chan struct{})
	p.Go(func() {})
	p.Go(func() { <-release; close(done) })
	waitIdle(t, p, 1)
	p.Close()
	if n := p.Idle(); n != 0 {
		t.Errorf("%d workers parked after Close", n)
	}
	close(release)
	<-done
	ran := make(chan struct{})
	p.Go(func() { close(ran) })
	<-ran
	p.Close() // idempotent
}

// waitIdle waits until n workers are parked (a worker parks after its
// function returns, which the caller cannot wait on otherwise).
func waitIdle(t *testing.T, p *Pool, n int) {
	t.Helper()
	for p.Idle() < n {
		runtime.Gosched()
	}
}

// goid is the calling goroutine's id, from its stack trace's header
// ("goroutine N [running]:").
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	var id uint64
	for _, c := range b[len("goroutine "):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
