//go:build !linux

package transport

import (
	"os/exec"
	"syscall"
)

// Containment names the mechanism stdio servers are started with: outside
// Linux, only their own process group (see contain_linux.go).
func Containment() string { return "process-group" }

// containment has one level outside Linux: the process group.
type containment struct{}

var contained containment

func (*containment) start(newCmd func() *exec.Cmd) (*exec.Cmd, int32, error) {
	cmd := newCmd()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd, 0, cmd.Start()
}
