//go:build linux

package nsinit

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// setRlimits sets the server's rlimits (getrlimit(2)), soft and hard
// alike so that the server cannot raise them: RLIMIT_AS to as bytes and
// RLIMIT_NPROC to nproc (0: leave as inherited), and RLIMIT_CORE to 0
// always (a core dump would write the server's memory, and whatever
// secrets it held, to disk outside its view).
//
// They are the fallback where no cgroup is writable, and weaker:
// RLIMIT_AS bounds each process's address space, not the memory it uses
// (V8 reserves gigabytes of address space up front: a Node.js server needs
// a cgroup or a memory limit of several GiB), and applies per process, not
// to the server's processes together. RLIMIT_NPROC is checked at fork and
// counts the processes and threads of the server's real user ID in its
// user namespace (and the namespaces above), not the server's alone; the
// kernel ignores it for a process with CAP_SYS_ADMIN or CAP_SYS_RESOURCE
// and for the initial namespace's root user (kernel/fork.c, copy_process),
// so it binds only a server that runs as another user.
func setRlimits(as, nproc uint64) error {
	set := func(name string, res int, v uint64) error {
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("setrlimit(%s, %d): %w", name, v, err)
		}
		return nil
	}
	if err := set("RLIMIT_CORE", unix.RLIMIT_CORE, 0); err != nil {
		return err
	}
	if as != 0 {
		if err := set("RLIMIT_AS", unix.RLIMIT_AS, as); err != nil {
			return err
		}
	}
	if nproc != 0 {
		if err := set("RLIMIT_NPROC", unix.RLIMIT_NPROC, nproc); err != nil {
			return err
		}
	}
	return nil
}
