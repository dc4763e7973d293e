package procinit

import (
	"os"
	"strconv"
	"syscall"
)

func init() {
	if len(os.Args) >= 4 && os.Args[0] == Arg0 {
		run(os.Args[1], os.Args[2], os.Args[3:])
	}
}

// run never returns: it execve()s path with argv and the environment, or
// reports why not on StatusFD and exits.
func run(flags, path string, argv []string) {
	syscall.CloseOnExec(StatusFD)
	if os.Getpid() != 1 {
		fail("namespace", nil, "not PID 1 of a new PID namespace")
	}
	// Private first: a mount namespace copies the parent's mounts with
	// their propagation, and a /proc mounted on a shared mount would
	// propagate to the parent's namespace (mount_namespaces(7)).
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		fail("mount", err, "making / private: "+err.Error())
	}
	var err error = syscall.EPERM
	if flags != FlagMountFault {
		err = syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "")
	}
	if err != nil {
		fail("mount", err, "mounting a procfs on /proc: "+err.Error())
	}
	err = syscall.Exec(path, argv, syscall.Environ())
	fail("exec", err, err.Error())
}

func fail(stage string, err error, msg string) {
	errno, _ := err.(syscall.Errno)
	syscall.Write(StatusFD, []byte(stage+"\x00"+strconv.Itoa(int(errno))+"\x00"+msg))
	syscall.Exit(127)
}
