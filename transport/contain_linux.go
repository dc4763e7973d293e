package transport

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/toolhost/toolhost/transport/internal/procinit"
)

// Containment of a stdio server's processes (Linux). Each server is started
// as the first process (PID 1) of a PID namespace of its own, with
// PR_SET_PDEATHSIG = SIGKILL:
//
//   - when the server process exits or is killed (Close's escalation ends
//     with SIGKILL), the kernel kills every other process of its namespace,
//     including descendants that left its process group with setsid();
//   - when toolhost dies, even by SIGKILL, the kernel sends the server
//     SIGKILL (the death signal), which takes its namespace down with it.
//
// The server also gets a mount namespace of its own with a fresh procfs on
// /proc, so that /proc shows its PID namespace: /proc/self is its getpid()
// (1), /proc/1 is itself, and no process outside the namespace is listed
// (proc(5); pid_namespaces(7), "/proc and PID namespaces"). Go's
// SysProcAttr runs no code between clone and execve, and only a process in
// the namespace can mount its procfs, so the child is first this very
// executable (/proc/self/exe) with argv[0] procinit.Arg0: the init function
// of package procinit makes the mount tree private, mounts the procfs and
// execve()s the server in the same process, which stays PID 1 (no extra
// process). It reports a failure on a close-on-exec pipe (fd 3), which the
// parent reads to its end: EOF means the server's execve succeeded.
//
// Namespaces need CAP_SYS_ADMIN; without it toolhost tries a user namespace
// (mapping its own uid and gid, nothing else) holding the others, which
// unprivileged users may create on most distributions. Where the mount
// namespace or the procfs mount is refused (a container whose /proc has
// masked paths refuses a new procfs in a user namespace), the server keeps
// its PID namespace but sees toolhost's /proc; and where no namespace is
// allowed it falls back to the death signal alone (the server itself dies
// with toolhost; its descendants are stopped by Close through its process
// group, but a setsid() grandchild or, after a SIGKILL of toolhost, a
// launcher's child such as npx's node can survive). docs/RATIONALE.md says
// why this mechanism.
const (
	containUnknown      int32 = iota
	containPIDNS              // CLONE_NEWPID | CLONE_NEWNS, fresh /proc
	containUserNS             // CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS, fresh /proc
	containPIDNSShared        // CLONE_NEWPID, toolhost's /proc
	containUserNSShared       // CLONE_NEWUSER | CLONE_NEWPID, toolhost's /proc
	containNone               // PR_SET_PDEATHSIG only
)

// containment remembers the first level that worked, so later starts do
// not try the ones this process is not allowed.
type containment struct {
	level      atomic.Int32
	mountFault bool // tests: the shim reports its procfs mount as refused
}

// contained is the level of every Stdio of this process.
var contained containment

// Containment names the mechanism stdio servers are started with in this
// process, strongest first:
//
//   - "pid-namespace": a PID namespace and a mount namespace with a fresh
//     /proc (toolhost has CAP_SYS_ADMIN, e.g. root);
//   - "user+pid-namespace": the same inside a user namespace that maps
//     only toolhost's uid and gid (unprivileged);
//   - "pid-namespace-shared-proc", "user+pid-namespace-shared-proc": the
//     PID namespace, but the mount namespace or the procfs mount was
//     refused, so the server sees toolhost's /proc (its /proc/self is not
//     its getpid(), and it can read other processes' entries);
//   - "death-signal": PR_SET_PDEATHSIG and the process group only;
//
// or "" before the first start.
func Containment() string { return levelName(contained.level.Load()) }

func levelName(level int32) string {
	switch level {
	case containPIDNS:
		return "pid-namespace"
	case containUserNS:
		return "user+pid-namespace"
	case containPIDNSShared:
		return "pid-namespace-shared-proc"
	case containUserNSShared:
		return "user+pid-namespace-shared-proc"
	case containNone:
		return "death-signal"
	}
	return ""
}

// freshProc reports whether level starts the server through the procfs
// shim.
func freshProc(level int32) bool { return level == containPIDNS || level == containUserNS }

func containAttr(level int32) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	switch level {
	case containPIDNS:
		a.Cloneflags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	case containPIDNSShared:
		a.Cloneflags = syscall.CLONE_NEWPID
	case containUserNS, containUserNSShared:
		a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID
		if level == containUserNS {
			a.Cloneflags |= syscall.CLONE_NEWNS
			// The shim needs it to mount; it drops it before the server's
			// execve (procinit.CapSysAdmin).
			a.AmbientCaps = []uintptr{procinit.CapSysAdmin}
		}
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	}
	return a
}

// start starts the command newCmd builds at the strongest containment
// level allowed, and returns the level it used. The caller must run it on a
// goroutine locked to its OS thread that stays so until the child is
// reaped: the death signal is tied to the thread that forked the child, not
// the process, and the Go runtime may end an unlocked thread.
func (c *containment) start(newCmd func() *exec.Cmd) (*exec.Cmd, int32, error) {
	level := c.level.Load()
	if level == containUnknown {
		level = containPIDNS
	}
	for {
		cmd := newCmd()
		cmd.SysProcAttr = containAttr(level)
		var err error
		if freshProc(level) {
			err = startThroughProcInit(cmd, c.mountFault)
		} else {
			err = cmd.Start()
		}
		if err == nil {
			c.level.CompareAndSwap(containUnknown, level)
			return cmd, level, nil
		}
		if level == containNone || !notAllowed(err) {
			return nil, level, err
		}
		level++
		c.level.Store(level)
	}
}

func notAllowed(err error) bool {
	var pe *procInitError
	if errors.As(err, &pe) && pe.stage != "exec" {
		return true // the namespaces were made, the procfs was refused
	}
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) ||
		errors.Is(err, syscall.EUSERS)
}

// procInitError is a failure the shim reported: stage "namespace" or
// "mount" (the level is not allowed here), or "exec" without an errno.
type procInitError struct {
	stage string
	errno syscall.Errno
	msg   string
}

func (e *procInitError) Error() string {
	if e.errno == 0 {
		return "procfs shim: " + e.stage + ": " + e.msg
	}
	return "procfs shim: " + e.stage + ": " + e.msg + ": " + e.errno.Error()
}

func (e *procInitError) Unwrap() error {
	if e.errno == 0 {
		return nil
	}
	return e.errno
}

// startThroughProcInit starts cmd as the shim's argument and waits until
// the shim has execve()d it (nil) or failed (the shim has been reaped).
func startThroughProcInit(cmd *exec.Cmd, mountFault bool) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	path := cmd.Path
	flags := "-"
	if mountFault {
		flags = procinit.FlagMountFault
	}
	cmd.Args = append([]string{procinit.Arg0, flags, path}, cmd.Args...)
	cmd.Path = procinit.Exe
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return err
	}
	// EOF when the shim's execve closes its copy (close-on-exec), or at its
	// exit; a message only on failure.
	b, rerr := io.ReadAll(io.LimitReader(r, 4096))
	if rerr == nil && len(b) == 0 {
		cmd.Args, cmd.Path = cmd.Args[3:], path
		return nil
	}
	_ = cmd.Wait()
	if rerr != nil {
		return fmt.Errorf("procfs shim: reading its status: %w", rerr)
	}
	parts := strings.SplitN(string(b), "\x00", 3)
	if len(parts) != 3 {
		return fmt.Errorf("procfs shim: unreadable status %q", b)
	}
	n, _ := strconv.Atoi(parts[1])
	if parts[0] == "exec" && n != 0 {
		// What os/exec returns when the execve fails without the shim.
		return &os.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(n)}
	}
	return &procInitError{stage: parts[0], errno: syscall.Errno(n), msg: parts[2]}
}
