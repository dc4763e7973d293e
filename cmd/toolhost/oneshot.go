package main

import (
	"os"
	"runtime/debug"
	"strings"

	"github.com/toolhost/toolhost/host"
)

// oneShotGCPercent is the garbage collector's target percentage (GOGC) of
// the one-shot commands (oneShotCommands): with the default 100, a
// toolhost call collected once in its short life (the heap reaches the
// runtime's 4 MB minimum goal while the backend starts), about 15% of its
// CPU time for nothing it keeps; at 400 the first collection waits for a
// 16 MB heap, so a usual one-shot command never collects, and one that
// handles large data still does, at 5× its live heap instead of 2×.
// cmd/compile raises its starting heap for the same reason. GOGC in the
// environment wins.
const oneShotGCPercent = 400

// oneShotCommands are the commands that start, do one thing and exit.
// serve, status --watch and logs -f run until stopped and keep the default.
var oneShotCommands = map[string]bool{
	"call": true, "tools": true, "prompts": true, "prompt": true, "resources": true, "read": true,
	"check": true, "inspect": true, "approve": true, "grant": true, "grants": true, "revoke": true,
}

// oneShotGC sets oneShotGCPercent when args (the command line without the
// program name) run a one-shot command and GOGC is not set. main calls it:
// tests that call run in-process keep their own collector settings.
func oneShotGC(args []string) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	if oneShotCommands[commandOf(args)] {
		debug.SetGCPercent(oneShotGCPercent)
	}
}

// commandOf returns the command word of args: the first argument that is
// neither a global flag (--config PATH, --log-level LEVEL, with one or two
// dashes or "=VALUE") nor a global flag's value; "" if there is none.
func commandOf(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			return a
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if (name == "config" || name == "log-level") && !hasValue {
			i++ // its value
		}
	}
	return ""
}

// warmSchemas runs host.WarmUp on a goroutine of its own: the
// tool-poisoning patterns, which the host needs before it can build the
// catalogue of a started backend, compile while the backend's process
// starts and initializes instead of after its tools/list. The host's
// compilation waits for this one if it is still running (a lazyre
// expression compiles once). The caller must call wait before it returns,
// so that the goroutine does not outlive it.
func warmSchemas() (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		host.WarmUp()
	}()
	return func() { <-done }
}
