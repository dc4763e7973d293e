//go:build !linux

package transport

import (
	"os/exec"
	"syscall"
)

// Containment names the mechanism stdio servers are started with: outside
// Linux, only their own process group (see contain_linux.go).
func Containment() string { return "process-group" }

func startContained(newCmd func() *exec.Cmd) (*exec.Cmd, error) {
	cmd := newCmd()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd, cmd.Start()
}
