package testutil

import (
	"fmt"
	"testing"
	"time"
)

// PollInterval is how often Eventually checks its condition.
const PollInterval = 10 * time.Millisecond

// Eventually calls cond every PollInterval (10ms), first at once, until it
// returns true, and fails tb (Fatalf) if it is still false after timeout.
// The failure names the timeout and msg: its arguments joined as by
// fmt.Sprint, where an argument that is a func() string is called at the
// failure, so that the message can show the last state cond saw. cond runs
// on the caller's goroutine and may itself call tb.Fatal.
//
// Use it only for state that announces no change (a process table, a
// counter inside a fixture server, a log): where the code under test sends
// an event or closes a channel, wait on that instead. Give a generous
// timeout: tests run under -race on busy 2-core machines, and the timeout
// only bounds how long a failing test takes.
func Eventually(tb testing.TB, timeout time.Duration, cond func() bool, msg ...any) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			args := make([]any, len(msg))
			for i, m := range msg {
				if f, ok := m.(func() string); ok {
					m = f()
				}
				args[i] = m
			}
			tb.Fatalf("not true after %v: %s", timeout, fmt.Sprint(args...))
		}
		time.Sleep(PollInterval)
	}
}
