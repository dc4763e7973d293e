package procinit

import (
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"
)

// CapSysAdmin is CAP_SYS_ADMIN (linux/capability.h). In a user namespace
// the child's uid is not 0, so execve of this executable would drop the
// capabilities the namespace gives; the parent raises this one as ambient
// (SysProcAttr.AmbientCaps), and run drops it again before the server's
// execve, which then has none, as without the shim.
const CapSysAdmin = 21

const (
	prCapAmbient         = 47 // PR_CAP_AMBIENT (linux/prctl.h)
	prCapAmbientIsSet    = 1
	prCapAmbientClearAll = 4
	capVersion3          = 0x20080522 // _LINUX_CAPABILITY_VERSION_3
)

func init() {
	if len(os.Args) >= 4 && os.Args[0] == Arg0 {
		run(os.Args[1], os.Args[2], os.Args[3:])
	}
}

// run never returns: it execve()s path with argv and the environment, or
// reports why not on StatusFD and exits.
func run(flags, path string, argv []string) {
	// Capabilities are per thread: drop and execve on this one.
	runtime.LockOSThread()
	syscall.CloseOnExec(StatusFD)
	if os.Getpid() != 1 {
		fail("namespace", nil, "not PID 1 of a new PID namespace")
	}
	// Private first: a mount namespace copies the parent's mounts with
	// their propagation, and a /proc mounted on a shared mount would
	// propagate to the parent's namespace (mount_namespaces(7)).
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		fail("mount", err, "making / private")
	}
	var err error = syscall.EPERM
	if flags != FlagMountFault {
		err = syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "")
	}
	if err != nil {
		fail("mount", err, "mounting a procfs on /proc")
	}
	if err := dropAmbientSysAdmin(); err != nil {
		fail("namespace", err, "dropping CAP_SYS_ADMIN")
	}
	err = syscall.Exec(path, argv, syscall.Environ())
	fail("exec", err, "execve")
}

func fail(stage string, err error, msg string) {
	errno, _ := err.(syscall.Errno)
	syscall.Write(StatusFD, []byte(stage+"\x00"+strconv.Itoa(int(errno))+"\x00"+msg))
	syscall.Exit(127)
}

// dropAmbientSysAdmin clears the ambient set and takes CAP_SYS_ADMIN out of
// the inheritable set when the parent raised it (capabilities(7),
// "Transformation of capabilities during execve()").
func dropAmbientSysAdmin() error {
	set, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientIsSet, CapSysAdmin, 0, 0, 0)
	if e != 0 || set != 1 {
		return nil // not raised (or no ambient capabilities: kernel < 4.3)
	}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClearAll, 0, 0, 0, 0); e != 0 {
		return e
	}
	hdr := struct {
		version uint32
		pid     int32
	}{version: capVersion3}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return e
	}
	data[CapSysAdmin/32].inheritable &^= 1 << (CapSysAdmin % 32)
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return e
	}
	return nil
}
