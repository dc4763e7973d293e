// Package testutil builds and locates the real backends toolhost's tests run
// against: the Go fixture MCP server (testdata/mcpfixture) and the reference
// server-everything from the npm registry.
package testutil

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// EverythingPackage is the npm package (pinned, so runs are reproducible) of
// the reference MCP server the integration tests use.
const EverythingPackage = "@modelcontextprotocol/server-everything@2026.8.31"

// EverythingArgs are npx's arguments to run EverythingPackage; append the
// transport ("stdio" or "streamableHttp").
var EverythingArgs = []string{"-y", EverythingPackage}

var (
	binOnce sync.Once
	binDir  string
	binErr  error
	builds  sync.Map // package path -> *buildResult
)

type buildResult struct {
	once sync.Once
	path string
	err  error
}

// Root returns the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Main runs the tests and removes what the helpers built.
//
// It also points $XDG_STATE_HOME at a directory of the test process's own
// (removed after), so that a toolhost child (serve, call, grant) opening
// its default store (issue 25) never touches the user's
// ~/.local/state/toolhost/toolhost.db: tests left it at 800 MB there, and
// packages run side by side contended for it.
func Main(m *testing.M) int {
	state, err := os.MkdirTemp("", "toolhost-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testutil:", err)
		return 1
	}
	defer os.RemoveAll(state)
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	return code
}

// GoBinary builds the main package pkg (relative to the repository root,
// e.g. "./testdata/mcpfixture") once per test process and returns the path of
// the executable.
func GoBinary(tb testing.TB, pkg string) string {
	tb.Helper()
	path, err := BuildGoBinary(pkg)
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// BuildGoBinary is GoBinary for callers without a testing.TB (examples).
func BuildGoBinary(pkg string) (string, error) {
	binOnce.Do(func() { binDir, binErr = os.MkdirTemp("", "toolhost-testbin-") })
	if binErr != nil {
		return "", binErr
	}
	v, _ := builds.LoadOrStore(pkg, &buildResult{})
	r := v.(*buildResult)
	r.once.Do(func() {
		out := filepath.Join(binDir, filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = Root()
		if b, err := cmd.CombinedOutput(); err != nil {
			r.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
			return
		}
		r.path = out
	})
	return r.path, r.err
}

// Fixture returns the path of the built fixture MCP server.
func Fixture(tb testing.TB) string { return GoBinary(tb, "./testdata/mcpfixture") }

// NeedNpx skips tb unless the npm-backed tests are asked for (NeedNPM) and
// npx is installed. CI has it; a missing npx is a set-up problem the skip
// message names.
func NeedNpx(tb testing.TB) {
	tb.Helper()
	NeedNPM(tb)
	if _, err := exec.LookPath("npx"); err != nil {
		tb.Skip("npx not found: install Node.js to run the server-everything tests")
	}
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// StartEverythingHTTP runs server-everything's Streamable HTTP transport on
// a free loopback port and returns its MCP endpoint URL. The server (its whole
// process group) is killed when the test ends.
func StartEverythingHTTP(tb testing.TB) string {
	tb.Helper()
	NeedNpx(tb)
	port := FreePort(tb)
	cmd := exec.Command("npx", append(EverythingArgs, "streamableHttp")...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.SysProcAttr = procAttr()
	stderr, _ := cmd.StderrPipe()
	cmd.Stdout = nil
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { killGroup(cmd) })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.Contains(sc.Text(), "listening on port") {
				close(ready)
				signalled = true
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(120 * time.Second):
		tb.Fatal("server-everything (streamableHttp) did not start within 120s")
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

var nodeModulesMu sync.Mutex

// TSClient returns the path of testdata/tsclient/client.mjs, a real MCP
// client on the official TypeScript SDK, after installing its pinned npm
// dependencies (npm ci) if they are not there yet. It skips tb when node is
// not installed.
func TSClient(tb testing.TB) string {
	tb.Helper()
	NeedNpx(tb)
	dir := filepath.Join(Root(), "testdata", "tsclient")
	nodeModulesMu.Lock()
	defer nodeModulesMu.Unlock()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	return filepath.Join(dir, "client.mjs")
}

// InspectorPackage is the MCP Inspector, pinned, whose --cli mode the
// gateway tests drive toolhost serve with.
const InspectorPackage = "@modelcontextprotocol/inspector@2.12.0"
