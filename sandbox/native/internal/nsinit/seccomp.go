package nsinit

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter (kernel Documentation/userspace-api/seccomp_filter.rst,
// seccomp(2)) is the last wall: it allows by default and denies, with
// EPERM, the system calls no MCP server needs and that would reach the
// kernel's most exposed surface or undo the sandbox:
//
//   - mounts and the root: mount, umount2, pivot_root, chroot and the new
//     mount API (move_mount, open_tree, fsopen, fsconfig, fsmount, fspick,
//     mount_setattr);
//   - other processes: ptrace, process_vm_readv, process_vm_writev, kcmp;
//   - namespaces: setns, unshare, and clone(2) with any CLONE_NEW* flag;
//     clone3(2) fails with ENOSYS (its flags are in memory a filter cannot
//     read), so that glibc and musl fall back to clone(2);
//   - the kernel's keyrings (keyctl, add_key, request_key), bpf,
//     perf_event_open, userfaultfd;
//   - modules, kexec and the machine: init_module, finit_module,
//     delete_module, kexec_load, kexec_file_load, reboot, swapon, swapoff,
//     syslog, acct, quotactl, iopl and ioperm (x86 only);
//   - the clocks: settimeofday, clock_settime, clock_adjtime, adjtimex;
//   - io_uring (io_uring_setup, io_uring_enter, io_uring_register): its
//     operations do not pass through seccomp, and it has been a steady
//     source of kernel exploits; libuv (Node.js) and others fall back to
//     ordinary system calls when io_uring_setup fails;
//   - file handles, which bypass path checks: open_by_handle_at,
//     name_to_handle_at; and lookup_dcookie;
//   - personality(2) with a persona other than PER_LINUX (0) or the query
//     0xffffffff (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE and the like weaken
//     the server's own address space layout);
//   - ioctl(2) TIOCSTI and TIOCLINUX, which push input into a terminal the
//     server may still reach (toolhost's controlling terminal).
//
// A system call of another architecture than the one toolhost was built
// for (the i386 ABI through int 0x80 on x86_64, AArch32 on aarch64) kills
// the process, as does the x32 ABI's (its numbers fail with ENOSYS): a
// filter keyed on one architecture's numbers says nothing about another's.
// Architectures: those go-seccomp-bpf has tables for (x86_64, aarch64,
// and others); Filter fails on the rest.

// cloneNewFlags are the CLONE_NEW* flags of clone(2) (clone(2),
// include/uapi/linux/sched.h): CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS,
// CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET. CLONE_NEWTIME
// (0x80) is valid only for unshare and clone3, both denied.
const cloneNewFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// personalityQuery is personality(0xffffffff): it reads the persona.
const personalityQuery = 0xffffffff

// DeniedSyscalls are the system calls the filter fails with EPERM
// whatever their arguments, by name (syscalls(2)). Names this
// architecture does not have (iopl and ioperm outside x86) are skipped.
var DeniedSyscalls = []string{
	"mount", "umount2", "pivot_root", "chroot",
	"move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"reboot", "swapon", "swapoff", "syslog", "acct", "quotactl",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"iopl", "ioperm",
	"open_by_handle_at", "name_to_handle_at", "lookup_dcookie",
	"setns", "unshare",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
}

// archOnly are the names of DeniedSyscalls some architectures lack.
var archOnly = map[string]bool{"iopl": true, "ioperm": true}

var (
	filterOnce sync.Once
	filterProg []bpf.RawInstruction
	filterErr  error
)

// Filter returns the assembled filter for the architecture toolhost runs
// on (cached): a classic BPF program over struct seccomp_data. Errors: an
// architecture go-seccomp-bpf has no system call table for, or a name in
// DeniedSyscalls missing from this architecture's table.
func Filter() ([]bpf.RawInstruction, error) {
	filterOnce.Do(func() { filterProg, filterErr = assembleFilter() })
	return filterProg, filterErr
}

func assembleFilter() ([]bpf.RawInstruction, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp filter for %s: %w", runtime.GOARCH, err)
	}
	var names []string
	for _, n := range DeniedSyscalls {
		if _, ok := info.SyscallNames[n]; !ok && archOnly[n] {
			continue
		}
		names = append(names, n)
	}
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: names}, // EPERM
			{
				Action: seccomp.ActionErrno, // EPERM
				NamesWithCondtions: []seccomp.NameWithConditions{
					{Name: "clone", Conditions: seccomp.ArgumentConditions{
						{Argument: 0, Operation: seccomp.BitsSet, Value: cloneNewFlags},
					}},
					{Name: "personality", Conditions: seccomp.ArgumentConditions{
						{Argument: 0, Operation: seccomp.NotEqual, Value: 0},
						{Argument: 0, Operation: seccomp.NotEqual, Value: personalityQuery},
					}},
				},
			},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
		},
	}
	body, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp filter for %s: %w", info.Name, err)
	}
	ioctl, ok := info.SyscallNames["ioctl"]
	if !ok {
		return nil, fmt.Errorf("seccomp filter for %s: no ioctl", info.Name)
	}
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	// go-seccomp-bpf sends a system call of another architecture to the
	// policy's default action (allow); this prologue kills the process
	// instead (seccomp_data.arch is at offset 4, nr at 0). It then refuses
	// ioctl TIOCSTI and TIOCLINUX comparing only the low 32 bits of the
	// request (the kernel reads an unsigned int: a caller could set the
	// high bits to dodge go-seccomp-bpf's 64-bit comparison).
	prog := append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.LoadAbsolute{Off: 0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(ioctl), SkipTrue: 4},
		bpf.LoadAbsolute{Off: argLow(1), Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCSTI, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.TIOCLINUX, SkipTrue: 1},
		bpf.RetConstant{Val: eperm},
	}, body...)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("seccomp filter for %s: %w", info.Name, err)
	}
	return raw, nil
}

// argLow is the offset in struct seccomp_data of the low 32 bits of
// system call argument i (args start at 16, 8 bytes each).
func argLow(i uint32) uint32 {
	x := uint16(1)
	if *(*byte)(unsafe.Pointer(&x)) == 0 { // big-endian
		return 16 + 8*i + 4
	}
	return 16 + 8*i
}

// errNoSeccomp: the kernel has no seccomp filters.
var errNoSeccomp = errors.New("the kernel does not offer seccomp filters (CONFIG_SECCOMP_FILTER)")

// installSeccomp installs the seccomp filter on every thread of the
// process (SECCOMP_FILTER_FLAG_TSYNC); the last step before execve. It sets
// no_new_privs itself (prctl(2) PR_SET_NO_NEW_PRIVS, which seccomp(2)
// requires of a process without CAP_SYS_ADMIN; already set by then, it is
// idempotent). Errors name the step; ENOSYS or EINVAL from seccomp(2) say
// the kernel lacks filters.
func installSeccomp() error {
	raw, err := Filter()
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	tid, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	switch {
	case errno == 0 && tid != 0:
		// With TSYNC, a positive result is the thread that could not be
		// synchronised (it has another filter).
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): thread %d has another filter", tid)
	case errno == unix.ENOSYS || errno == unix.EINVAL:
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w: %w", errNoSeccomp, errno)
	case errno != 0:
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	return nil
}

// SeccompSupported reports whether the kernel offers seccomp filters with
// the SECCOMP_RET_KILL_PROCESS action the filter uses (Linux 4.14+;
// seccomp(2) SECCOMP_GET_ACTION_AVAIL) and whether the filter assembles
// for this architecture.
func SeccompSupported() bool {
	action := uint32(unix.SECCOMP_RET_KILL_PROCESS)
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	if errno != 0 {
		return false
	}
	_, err := Filter()
	return err == nil
}
