package transport_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
)

func testStdioOptions(t *testing.T) *transport.StdioOptions {
	return &transport.StdioOptions{Logger: hclog.New(&hclog.LoggerOptions{Name: t.Name(), Output: testWriter{t}, Level: hclog.Debug}), TerminateGrace: 500 * time.Millisecond}
}

// TestStdioProcMountRefusedFallsBack: where the procfs mount is refused
// (simulated in the shim), the server still starts, in its PID namespace
// with toolhost's /proc, and the level kept says so ("-shared-proc")
// rather than claiming a /proc of its own.
func TestStdioProcMountRefusedFallsBack(t *testing.T) {
	before := transport.Containment()
	tr, level := transport.NewStdioOwnContainment(transport.Command{
		Path:       testutil.Fixture(t),
		Args:       []string{"-proc"},
		InheritEnv: config.DefaultInheritEnv,
	}, testStdioOptions(t), true)
	defer tr.Close()
	if _, err := tr.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := level()
	if got == "death-signal" {
		t.Skip("no PID namespace on this machine")
	}
	if !strings.HasSuffix(got, "-shared-proc") {
		t.Fatalf("level %q after a refused procfs mount, want a -shared-proc level", got)
	}
	mcpEcho(t, tr, "after the fallback")
	v := callProcView(t, tr)
	if v.Pid != 1 || v.Self == "1" {
		t.Errorf("server sees pid %d and /proc/self -> %s, want pid 1 and toolhost's /proc", v.Pid, v.Self)
	}
	if after := transport.Containment(); after != before && before != "" {
		t.Errorf("the process's level changed from %q to %q", before, after)
	}
	t.Logf("level %s; server sees pid %d, /proc/self -> %s", got, v.Pid, v.Self)
}

// TestStdioStartErrorThroughProcShim: a server that cannot be executed
// fails Connect at once with ErrStart and the error os/exec gives without
// the shim (an *fs.PathError "fork/exec PATH: ..."), which errors.Is
// matches against fs.ErrNotExist or fs.ErrPermission; nothing is left
// running.
func TestStdioStartErrorThroughProcShim(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       error
	}{
		{"missing", filepath.Join(dir, "no-such-server"), fs.ErrNotExist},
		{"not executable", notExec, fs.ErrPermission},
		{"a directory", dir, fs.ErrPermission},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := transport.NewStdio(transport.Command{Path: tc.path, InheritEnv: config.DefaultInheritEnv}, testStdioOptions(t))
			defer tr.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := tr.Connect(ctx)
			if !errors.Is(err, transport.ErrStart) || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "fork/exec "+tc.path+": ") {
				t.Fatalf("Connect: %v; want ErrStart and %v naming fork/exec %s", err, tc.want, tc.path)
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Op != "fork/exec" || pe.Path != tc.path {
				t.Errorf("Connect: %v; want an *fs.PathError (fork/exec %s), as os/exec gives", err, tc.path)
			}
			if pid := tr.Pid(); pid != 0 {
				t.Errorf("Pid() = %d after a failed start", pid)
			}
			t.Logf("%v (containment %s)", err, transport.Containment())
		})
	}
}

// mcpEcho calls the fixture's echo tool.
func mcpEcho(t *testing.T, tr transport.Transport, text string) {
	t.Helper()
	res, err := tr.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != text {
		t.Fatalf("echo: %+v", res.Content)
	}
}

// BenchmarkStdioStart: start the fixture server and complete the
// initialize handshake, then Close, at each containment level; "/proc=fresh"
// pays for the procfs shim (one more execve of this binary and its Go
// runtime start, two mount calls). Compare without -race, as toolhost runs:
//
//	go test -run '^$' -bench StdioStart -count 6 ./transport
func BenchmarkStdioStart(b *testing.B) {
	fixture := testutil.Fixture(b)
	for _, bc := range []struct{ name, level string }{
		{"proc=fresh", "pid-namespace"},
		{"proc=shared", "pid-namespace-shared-proc"},
		{"proc=none", "death-signal"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				tr, _ := transport.NewStdioAtLevel(transport.Command{Path: fixture, InheritEnv: config.DefaultInheritEnv}, nil, bc.level)
				if _, err := tr.Connect(context.Background()); err != nil {
					b.Fatal(err)
				}
				tr.Close()
			}
		})
	}
}

// TestStdioProcUserNamespace: at the user+pid-namespace level (what an
// unprivileged toolhost gets) the server has a /proc of its namespace too;
// the shim's CAP_SYS_ADMIN, raised as ambient for its mount, is gone from
// the server's ambient set.
func TestStdioProcUserNamespace(t *testing.T) {
	tr, level := transport.NewStdioAtLevel(transport.Command{
		Path:       testutil.Fixture(t),
		Args:       []string{"-proc"},
		InheritEnv: config.DefaultInheritEnv,
	}, testStdioOptions(t), "user+pid-namespace")
	defer tr.Close()
	if _, err := tr.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := level(); got != "user+pid-namespace" {
		t.Skipf("level %s: user namespaces, or a procfs mount in one, are refused here", got)
	}
	v := callProcView(t, tr)
	checkOwnProc(t, v)
	t.Logf("server sees %+v", v)
}
