package testutil

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveURL matches the line where `toolhost serve --listen` names its
// Streamable HTTP endpoint ("toolhost: serving MCP (Streamable HTTP) at
// http://127.0.0.1:PORT/mcp").
var serveURL = regexp.MustCompile(`at (http://127\.0\.0\.1:\d+)/mcp`)

// ServeHTTP starts `bin --config cfg serve --listen 127.0.0.1:0` (bin a
// toolhost binary, see GoBinary) with env added to the test's environment
// and $XDG_STATE_HOME a new temporary directory (its default store's), as
// a process of its own, and returns the base URL it names on stderr
// once it listens ("http://127.0.0.1:PORT"; the MCP endpoint is its /mcp).
// Its stderr is drained until it exits; at tb's cleanup it gets SIGTERM,
// then SIGKILL if it has not exited a minute later, and is reaped. tb fails,
// with what serve printed, if serve exits before naming its endpoint.
func ServeHTTP(tb testing.TB, bin, cfg string, env ...string) string {
	tb.Helper()
	cmd := exec.Command(bin, "--config", cfg, "serve", "--listen", "127.0.0.1:0")
	// A store of its own (unless env names one), not the one the test
	// process's other children share (Main): serves started side by side
	// need not wait on each other's SQLite locks.
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+tb.TempDir())
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	drained := make(chan struct{})
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-drained: // it exited: its stderr is closed
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-drained
		}
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stderr)
	var url string
	var log strings.Builder
	for url == "" && sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if m := serveURL.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	go func() {
		defer close(drained)
		for sc.Scan() {
		}
	}()
	if url == "" {
		tb.Fatalf("toolhost serve did not say where it listens:\n%s", log.String())
	}
	return url
}
