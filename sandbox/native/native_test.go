package native

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/sandbox"
)

func TestMain(m *testing.M) {
	before := goleak.IgnoreCurrent()
	code := testutil.Main(m)
	if code == 0 {
		if err := goleak.Find(before); err != nil {
			println("goleak:", err.Error())
			code = 1
		}
	}
	os.Exit(code)
}

// needSandbox skips t where the kernel cannot run a strict sandbox.
func needSandbox(t *testing.T) {
	t.Helper()
	m := Probe()
	if !m.UserNS || m.Landlock < LandlockABI || !m.Seccomp {
		t.Skipf("the kernel does not offer a strict native sandbox: %+v", m)
	}
}

type result struct {
	stdout, stderr string
	launchErr      error
	waitErr        error
	exitErr        error
	pid            int
}

// runIn runs argv (argv[0] an absolute path) in a sandbox of spec, the way
// the Stdio transport does: Launch on a goroutine locked to its thread,
// Wait, then Exited.
func runIn(t *testing.T, spec Spec, argv ...string) result {
	t.Helper()
	if spec.Command == "" {
		spec.Command = argv[0]
	}
	if spec.Mode == "" {
		spec.Mode = ModeStrict
	}
	if spec.Name == "" {
		spec.Name = "test"
	}
	plan, err := spec.Plan()
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	l := New(plan, nil)
	var out, errb bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, spec.Env...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		var r result
		la, err := l.Launch(cmd)
		if err != nil {
			r.launchErr = err
			done <- r
			return
		}
		r.pid = cmd.Process.Pid
		r.waitErr = cmd.Wait()
		r.exitErr = la.Exited(r.waitErr)
		r.stdout, r.stderr = out.String(), errb.String()
		done <- r
	}()
	select {
	case r := <-done:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("the sandboxed command did not finish in 60s")
	}
	return result{}
}

func sh(t *testing.T, spec Spec, script string) result {
	t.Helper()
	return runIn(t, spec, "/bin/sh", "-c", script)
}

// TestLaunchShell: a shell runs inside; it is PID 1, sees its own /proc,
// has no capabilities and cannot read /root or the repository.
func TestLaunchShell(t *testing.T) {
	needSandbox(t)
	r := sh(t, Spec{}, `echo pid=$$; grep -E '^Cap(Eff|Prm|Inh|Bnd|Amb)' /proc/self/status; ls /proc | grep -cE '^[0-9]+$'; ls -d /root/.ssh 2>&1; cat `+testutil.Root()+`/go.mod 2>&1 | head -1; echo done`)
	if r.launchErr != nil {
		t.Fatal(r.launchErr)
	}
	t.Logf("stdout:\n%s\nstderr:\n%s\nwait: %v", r.stdout, r.stderr, r.waitErr)
	if r.waitErr != nil {
		t.Fatalf("shell failed: %v", r.waitErr)
	}
	for _, want := range []string{"pid=1\n", "CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "done"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if strings.Contains(r.stdout, "module ") {
		t.Error("the repository's go.mod is readable inside the sandbox")
	}
}

var _ = errors.Is
var _ = sandbox.MountReadOnly
