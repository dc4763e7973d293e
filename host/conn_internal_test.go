package host

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitSignal is a context that says when its Done channel is first asked
// for: conn asks for it once it has read b and is about to wait.
type waitSignal struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func (c *waitSignal) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}

// TestConnDeadlineSaysNextAttempt: a call that began waiting on a backend
// restarting before its supervisor set the next attempt (a lost connection
// is detached first; the supervisor's restarting with the same error wakes
// nobody) still says, when its deadline comes, when the next attempt is.
// (CI, 2026-11-28: TestRestartingBackendStaysListed's call met this gap.)
func TestConnDeadlineSaysNextAttempt(t *testing.T) {
	lost := errors.New("backend connection lost")
	b := &backend{name: "crashy", state: StateRestarting, lastErr: lost, wake: make(chan struct{})}
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := &waitSignal{Context: base, waiting: make(chan struct{})}
	errc := make(chan error, 1)
	go func() {
		_, _, err := b.conn(ctx)
		errc <- err
	}()
	<-ctx.waiting
	b.mu.Lock()
	b.next = time.Now().Add(time.Minute)
	b.mu.Unlock()
	b.setState(StateRestarting, lost) // what afterFailure does: wakes nobody
	cancel()
	err := <-errc
	if !errors.Is(err, ErrBackendUnavailable) {
		t.Fatalf("err = %v; want ErrBackendUnavailable", err)
	}
	for _, want := range []string{`backend "crashy" still restarting`, "(last error: backend connection lost)", "its next start attempt is in "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q; want it to contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "attempt is in 0s") {
		t.Errorf("err = %q; want the attempt a minute away", err)
	}
}
