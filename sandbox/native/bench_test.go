package native_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/sandbox/native"
	"github.com/toolhost/toolhost/transport"
)

// benchServer is one server of the benchmarks: its command unsandboxed
// and sandboxed (the Python script is seen at another path inside), the
// sandbox's spec and a tool call that echoes.
type benchServer struct {
	name        string
	off, inside transport.Command
	spec        native.Spec
	tool        string
	args        map[string]any
}

func benchServers(b *testing.B) []benchServer {
	b.Helper()
	fixture := testutil.Fixture(b)
	go1 := transport.Command{Path: fixture, InheritEnv: inheritEnv}
	out := []benchServer{{name: "go", off: go1, inside: go1, spec: native.Spec{Name: "go"}, tool: "echo", args: map[string]any{"text": "x"}}}
	// The system's python3: a pyenv shim (a bash script that runs pyenv,
	// a dozen processes) would measure pyenv more than the sandbox.
	py, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		py, err = exec.LookPath("python3")
	}
	if err == nil {
		dir := filepath.Join(testutil.Root(), "testdata", "pyserver")
		out = append(out, benchServer{
			name:   "python",
			off:    transport.Command{Path: py, Args: []string{filepath.Join(dir, "server.py")}, InheritEnv: inheritEnv},
			inside: transport.Command{Path: py, Args: []string{"/srv/pyserver/server.py"}, InheritEnv: inheritEnv},
			spec: native.Spec{Name: "python", Capabilities: sandbox.Capabilities{Mounts: []sandbox.Mount{
				{Guest: "/srv/pyserver", Host: dir, Mode: sandbox.MountReadOnly}}}},
			tool: "echo", args: map[string]any{"text": "x"},
		})
	}
	return out
}

// benchStdio returns the options and command of s: unsandboxed, or
// strict with one Launcher planned once (as the host keeps one across a
// server's restarts).
func benchStdio(b *testing.B, s benchServer, strict bool) (transport.Command, *transport.StdioOptions) {
	b.Helper()
	opts := &transport.StdioOptions{Logger: hclog.NewNullLogger(), TerminateGrace: time.Second}
	if !strict {
		return s.off, opts
	}
	needStrict(b)
	opts.Launcher = native.New(plan(b, s.spec, s.inside), nil)
	return s.inside, opts
}

// BenchmarkNativeStart: a server's start, from Connect to the end of the
// initialize handshake, unsandboxed and in a strict sandbox (namespaces,
// the new root, Landlock, seccomp, cgroups), side by side: benchstat
// -col /sandbox gives the cost of the sandbox per start (the target is
// +50 ms at most). Close is outside the timing.
func BenchmarkNativeStart(b *testing.B) {
	for _, s := range benchServers(b) {
		for _, mode := range []string{"off", "strict"} {
			b.Run("server="+s.name+"/sandbox="+mode, func(b *testing.B) {
				cmd, opts := benchStdio(b, s, mode == "strict")
				ctx := context.Background()
				b.ResetTimer()
				for range b.N {
					tr := transport.NewStdio(cmd, opts)
					if _, err := tr.Connect(ctx); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					if err := tr.Close(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			})
		}
	}
}

// BenchmarkNativeCall: a warm tools/call (echo) on a running server,
// unsandboxed and in a strict sandbox, side by side (the target is +5%
// at most: the sandbox is in the kernel's way only at system calls that
// Landlock and seccomp check).
func BenchmarkNativeCall(b *testing.B) {
	for _, s := range benchServers(b) {
		for _, mode := range []string{"off", "strict"} {
			b.Run("server="+s.name+"/sandbox="+mode, func(b *testing.B) {
				cmd, opts := benchStdio(b, s, mode == "strict")
				tr := transport.NewStdio(cmd, opts)
				defer tr.Close()
				if _, err := tr.Connect(context.Background()); err != nil {
					b.Fatal(err)
				}
				call(b, tr, s.tool, s.args) // warm
				b.ResetTimer()
				for range b.N {
					if _, err := tryCall(tr, s.tool, s.args); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
