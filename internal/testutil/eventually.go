package testutil

import (
	"fmt"
	"testing"
	"time"
)

// Eventually polls cond every 10ms until it returns true, failing tb with
// msg (fmt.Sprint of its arguments) if it is still false after timeout. Use a
// generous timeout: tests run under -race on busy 2-core machines.
func Eventually(tb testing.TB, timeout time.Duration, cond func() bool, msg ...any) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("not true after %v: %s", timeout, fmt.Sprint(msg...))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
