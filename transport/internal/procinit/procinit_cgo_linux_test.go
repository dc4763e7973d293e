//go:build linux && cgo

package procinit

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// runShim runs this test binary as the shim, in new PID and mount
// namespaces (inside a user namespace when not root), with the server
// argv, and returns the server's stdout and stderr and what the shim wrote
// on its status pipe.
func runShim(t *testing.T, env []string, argv ...string) (stdout, stderr, status string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(Exe)
	cmd.Args = append([]string{Arg0, "-", argv[0]}, argv...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS}
	if os.Getuid() != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.AmbientCaps = []uintptr{CapSysAdmin}
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) {
			t.Skipf("namespaces are refused here: %v", err)
		}
		t.Fatal(err)
	}
	w.Close()
	var st bytes.Buffer
	_, _ = st.ReadFrom(r)
	_ = cmd.Wait()
	if strings.HasPrefix(st.String(), "mount\x00") {
		t.Skipf("a procfs mount is refused here: %q", st.String())
	}
	return out.String(), errb.String(), st.String()
}

// TestShimRunsBeforeGoRuntime: with cgo the shim is the C constructor, so
// the Go runtime never starts in it — GODEBUG=inittrace=1, which makes the
// runtime print a line per package it initialises, prints nothing before
// the server runs (the Go init shim printed the packages initialised
// before procinit); the server is PID 1 and sees its own /proc.
func TestShimRunsBeforeGoRuntime(t *testing.T) {
	out, errs, status := runShim(t, []string{"GODEBUG=inittrace=1", "PATH=/usr/bin:/bin"},
		"/bin/sh", "-c", `echo "$$ $(readlink /proc/self)"`)
	if status != "" {
		t.Fatalf("shim status %q", status)
	}
	if strings.Contains(errs, "init ") {
		t.Fatalf("the Go runtime ran in the shim:\n%s", errs)
	}
	// $$ is the shell's PID (1); /proc/self is readlink's own, a small PID
	// in a procfs of the new namespace (toolhost's would show its own PID
	// space).
	f := strings.Fields(out)
	if len(f) != 2 || f[0] != "1" || len(f[1]) != 1 {
		t.Fatalf("server saw PID and /proc/self %q, want 1 and a one-digit PID", out)
	}
}

// TestShimReportsExecFailure: a server path that cannot be executed is
// reported on the status pipe as stage "exec" with its errno, which the
// transport turns into the error os/exec gives without the shim.
func TestShimReportsExecFailure(t *testing.T) {
	_, _, status := runShim(t, nil, "/nonexistent/server")
	want := "exec\x00" + "2" + "\x00execve" // ENOENT
	if status != want {
		t.Fatalf("status %q, want %q", status, want)
	}
}
