package native_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/sandbox/native"
	"github.com/toolhost/toolhost/transport"
)

// inheritEnv is what the sandboxed servers of these tests inherit from
// toolhost (a subset of config.DefaultInheritEnv).
var inheritEnv = []string{"PATH", "HOME", "LANG"}

// needStrict skips t where the kernel cannot run a strict sandbox.
func needStrict(tb testing.TB) {
	tb.Helper()
	m := native.Probe()
	if !m.UserNS || m.Landlock < native.LandlockABI || !m.Seccomp {
		tb.Skipf("the kernel does not offer a strict native sandbox: %+v", m)
	}
}

// hostileBinary builds testdata/hostileserver.
func hostileBinary(tb testing.TB) string {
	tb.Helper()
	return testutil.GoBinary(tb, "./testdata/hostileserver")
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// logger returns a logger writing to tb's log.
func logger(tb testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: tb.Name(), Output: tbWriter{tb}, Level: hclog.Debug})
}

// envOf is the environment a Stdio transport gives cmd (its InheritEnv
// from toolhost's environment, then Env): the Spec's Env, which decides
// the runtime set.
func envOf(cmd transport.Command) []string {
	var env []string
	for _, k := range cmd.InheritEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range cmd.Env {
		env = append(env, k+"="+v)
	}
	return env
}

// plan plans spec for cmd: Command is cmd.Path resolved, Env cmd's
// environment, Mode strict unless set.
func plan(tb testing.TB, spec native.Spec, cmd transport.Command) *native.Plan {
	tb.Helper()
	if spec.Mode == "" {
		spec.Mode = native.ModeStrict
	}
	if spec.Name == "" {
		spec.Name = "hostile"
	}
	if spec.Command == "" {
		spec.Command = cmd.Path
	}
	spec.Env = append(envOf(cmd), spec.Env...)
	p, err := spec.Plan()
	if err != nil {
		tb.Fatalf("Plan: %v", err)
	}
	return p
}

// sandboxed returns a Stdio transport that runs cmd in a native sandbox
// of spec (strict unless spec says otherwise), connected; it is closed
// when tb ends. With a nil spec the server runs unsandboxed.
func sandboxed(tb testing.TB, spec *native.Spec, cmd transport.Command) (*transport.Stdio, *native.Launcher) {
	tb.Helper()
	opts := &transport.StdioOptions{Logger: logger(tb), TerminateGrace: time.Second}
	var l *native.Launcher
	if spec != nil {
		l = native.New(plan(tb, *spec, cmd), logger(tb).Named("sandbox"))
		opts.Launcher = l
	}
	tr := transport.NewStdio(cmd, opts)
	tb.Cleanup(func() { tr.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := tr.Connect(ctx); err != nil {
		tb.Fatalf("Connect: %v", err)
	}
	return tr, l
}

// call calls tool with args and returns its text (the texts joined by
// newlines); isError results are returned as text too, prefixed "isError: ".
func call(tb testing.TB, tr transport.Transport, tool string, args map[string]any) string {
	tb.Helper()
	text, err := tryCall(tr, tool, args)
	if err != nil {
		tb.Fatalf("%s(%v): %v", tool, args, err)
	}
	return text
}

func tryCall(tr transport.Transport, tool string, args map[string]any) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	text := strings.Join(parts, "\n")
	if res.IsError {
		text = "isError: " + text
	}
	return text, nil
}

// running lists the live processes whose executable is the file bin (the
// same inode, whatever the mount namespace shows it as).
func running(bin string) []int {
	want, err := os.Stat(bin)
	if err != nil {
		return nil
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || !testutil.Alive(pid) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(d, "exe")); err == nil && os.SameFile(fi, want) {
			out = append(out, pid)
		}
	}
	return out
}

// noneRunning waits until no process runs bin.
func noneRunning(tb testing.TB, bin string) {
	tb.Helper()
	var left []int
	testutil.Eventually(tb, 10*time.Second, func() bool {
		left = running(bin)
		return len(left) == 0
	}, "processes of ", bin, " still running: ", func() string { return fmt.Sprint(left) })
}

// lostError waits until tr reports its connection lost and returns the
// fault (ErrConnectionLost wrapping the launcher's explanation).
func lostError(tb testing.TB, tr *transport.Stdio) error {
	tb.Helper()
	select {
	case <-tr.Done():
	case <-time.After(30 * time.Second):
		tb.Fatal("the server is still running 30s later")
	}
	err := tr.Lost()
	if err == nil {
		tb.Fatal("Lost() is nil after Done")
	}
	return err
}
