package transport

import (
	"os"
	"syscall"
)

// TOOLHOST_TEST_PROC_MOUNT_FAULT in a server's environment makes the procfs
// shim of a transport test binary report its mount of /proc as refused
// (EPERM) without trying it. Package variables are initialised before the
// shim's init runs.
var _ = func() bool {
	if os.Getenv("TOOLHOST_TEST_PROC_MOUNT_FAULT") != "" {
		procMountFault = syscall.EPERM
	}
	return true
}()

// NewStdioOwnContainment is NewStdio with levels tried and kept apart from
// the process's (Containment); level names the one it has kept.
func NewStdioOwnContainment(cmd Command, opts *StdioOptions) (s *Stdio, level func() string) {
	s = NewStdio(cmd, opts)
	s.contain = &containment{}
	return s, func() string { return levelName(s.contain.level.Load()) }
}
