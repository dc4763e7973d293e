package transport

import (
	"errors"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
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
// A PID namespace needs CAP_SYS_ADMIN; without it toolhost tries a user
// namespace (mapping its own uid and gid, nothing else) holding the PID
// namespace, which unprivileged users may create on most distributions; and
// where neither is allowed it falls back to the death signal alone (the
// server itself dies with toolhost; its descendants are stopped by Close
// through its process group, but a setsid() grandchild or, after a SIGKILL
// of toolhost, a launcher's child such as npx's node can survive).
// docs/RATIONALE.md says why this mechanism.
const (
	containUnknown int32 = iota
	containPIDNS         // CLONE_NEWPID
	containUserNS        // CLONE_NEWUSER | CLONE_NEWPID
	containNone          // PR_SET_PDEATHSIG only
)

// containLevel is the first level that worked, so later starts do not try
// the ones this process is not allowed.
var containLevel atomic.Int32

// Containment names the mechanism stdio servers are started with in this
// process: "pid-namespace", "user+pid-namespace", "death-signal", or ""
// before the first start.
func Containment() string {
	switch containLevel.Load() {
	case containPIDNS:
		return "pid-namespace"
	case containUserNS:
		return "user+pid-namespace"
	case containNone:
		return "death-signal"
	}
	return ""
}

func containAttr(level int32) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	switch level {
	case containPIDNS:
		a.Cloneflags = syscall.CLONE_NEWPID
	case containUserNS:
		a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	}
	return a
}

// startContained starts the command newCmd builds at the strongest
// containment level allowed. The caller must run it on a goroutine locked
// to its OS thread that stays so until the child is reaped: the death
// signal is tied to the thread that forked the child, not the process, and
// the Go runtime may end an unlocked thread.
func startContained(newCmd func() *exec.Cmd) (*exec.Cmd, error) {
	level := containLevel.Load()
	if level == containUnknown {
		level = containPIDNS
	}
	for {
		cmd := newCmd()
		cmd.SysProcAttr = containAttr(level)
		err := cmd.Start()
		if err == nil {
			containLevel.CompareAndSwap(containUnknown, level)
			return cmd, nil
		}
		if level == containNone || !notAllowed(err) {
			return nil, err
		}
		level++
		containLevel.Store(level)
	}
}

func notAllowed(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) ||
		errors.Is(err, syscall.EUSERS)
}
