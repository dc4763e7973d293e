package testutil

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// fakeTB records a Fatalf and stops its caller by panicking with the
// message (testing's own Fatalf ends the goroutine).
type fakeTB struct{ testing.TB }

type fatal string

func (fakeTB) Helper() {}

func (fakeTB) Fatalf(format string, args ...any) { panic(fatal(fmt.Sprintf(format, args...))) }

func TestEventually(t *testing.T) {
	n := 0
	Eventually(t, time.Minute, func() bool { n++; return n == 3 }, "three calls")
	if n != 3 {
		t.Fatalf("cond called %d times, want 3 (until true)", n)
	}
}

func TestEventuallyFails(t *testing.T) {
	last := 0
	msg := func() (msg fatal) {
		defer func() { msg, _ = recover().(fatal) }()
		Eventually(fakeTB{t}, 50*time.Millisecond, func() bool { last++; return false },
			"never true, ", func() string { return fmt.Sprintf("last %d", last) })
		return ""
	}()
	if !strings.HasPrefix(string(msg), "not true after 50ms: never true, last ") || strings.HasSuffix(string(msg), "last 0") {
		t.Fatalf("failure %q: want the timeout and the message with the last state", msg)
	}
}
