package procgroup_test

import (
	"os/exec"
	"slices"
	"syscall"
	"testing"

	"github.com/toolhost/toolhost/internal/procgroup"
)

// TestMembers: a child started in a process group of its own is its one
// member while it runs; once it has exited and been reaped the group is
// empty and not alive.
func TestMembers(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	if got := procgroup.Members(pgid); !slices.Equal(got, []int{pgid}) || !procgroup.Alive(pgid) {
		t.Errorf("running: Members %v, Alive %v; want [%d], true", got, procgroup.Alive(pgid), pgid)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	_ = cmd.Wait()
	if got := procgroup.Members(pgid); len(got) != 0 || procgroup.Alive(pgid) {
		t.Errorf("reaped: Members %v, Alive %v; want none, false", got, procgroup.Alive(pgid))
	}
}
