package nsinit

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompHelperEnv switches the test binary into the helper process of
// TestSeccomp* ("filter": install the filter first; "none": do not).
const seccompHelperEnv = "TOOLHOST_NSINIT_SECCOMP_HELPER"

// probe is one system call the filter must refuse, with arguments that are
// harmless if it does not (a helper run without the filter makes each of
// them: bad descriptors, missing paths, invalid commands).
type probe struct {
	name string
	args func() [6]uintptr
	want unix.Errno // under the filter
}

func str(s string) uintptr {
	p, err := unix.BytePtrFromString(s)
	if err != nil {
		panic(err)
	}
	return uintptr(unsafe.Pointer(p))
}

const (
	missing = "/nonexistent-toolhost-seccomp-probe"
	noPid   = 0x3ffffff0 // above pid_max's ceiling (4194304): no such process
)

// perLinux32 is PER_LINUX32 (include/uapi/linux/personality.h).
const perLinux32 = 0x0008

var badFD = uintptr(^uint(0)) // -1

func probes() []probe {
	args := func(a ...uintptr) func() [6]uintptr {
		return func() [6]uintptr {
			var r [6]uintptr
			copy(r[:], a)
			return r
		}
	}
	p := func(name string, a func() [6]uintptr) probe { return probe{name, a, unix.EPERM} }
	cwd := unix.AT_FDCWD
	atCWD := uintptr(cwd)
	ps := []probe{
		p("mount", func() [6]uintptr { return [6]uintptr{str("none"), str(missing), str("tmpfs")} }),
		p("umount2", func() [6]uintptr { return [6]uintptr{str(missing)} }),
		p("pivot_root", func() [6]uintptr { return [6]uintptr{str(missing), str(missing)} }),
		p("chroot", func() [6]uintptr { return [6]uintptr{str(missing)} }),
		p("move_mount", args(badFD, 0, badFD, 0, 0)),
		p("open_tree", func() [6]uintptr { return [6]uintptr{atCWD, str(missing)} }),
		p("fsopen", func() [6]uintptr { return [6]uintptr{str("toolhost-no-such-fs")} }),
		p("fsconfig", args(badFD, 0)),
		p("fsmount", args(badFD, 0, 0)),
		p("fspick", func() [6]uintptr { return [6]uintptr{atCWD, str(missing)} }),
		p("mount_setattr", args(badFD, 0, 0, 0, 0)),
		p("ptrace", args(unix.PTRACE_PEEKUSR, noPid)),
		p("process_vm_readv", args(noPid)),
		p("process_vm_writev", args(noPid)),
		p("kcmp", args(noPid, noPid, 0)),
		p("keyctl", args(0xdead)),
		p("add_key", args()),
		p("request_key", args()),
		p("bpf", args(0xdead)),
		p("perf_event_open", args()),
		p("userfaultfd", args(0xdead)),
		p("init_module", args(0, 0, 0)),
		p("finit_module", args(badFD, 0, 0)),
		p("delete_module", func() [6]uintptr { return [6]uintptr{str("toolhost_no_such_module"), unix.O_NONBLOCK} }),
		p("kexec_load", args(0, 0, 0, 0xdead0000)),
		p("kexec_file_load", args(badFD, badFD, 0, 0, 0xdead0000)),
		p("reboot", args(0xdead, 0xbeef, 0)), // bad magic: EINVAL
		p("swapon", func() [6]uintptr { return [6]uintptr{str(missing)} }),
		p("swapoff", func() [6]uintptr { return [6]uintptr{str(missing)} }),
		p("syslog", args(0xdead)),
		p("acct", func() [6]uintptr { return [6]uintptr{str(missing + "/acct")} }),
		p("quotactl", args(0xdead)),
		p("settimeofday", args(0, 0)),             // neither: a no-op
		p("clock_settime", args(badFD, 0)),        // clock -1: EINVAL
		p("clock_adjtime", args(badFD, 0)),        // clock -1
		p("adjtimex", args(0)),                    // NULL: EFAULT
		p("open_by_handle_at", args(badFD, 0)),    // EBADF
		p("name_to_handle_at", args(badFD, 0)),    // EBADF
		p("lookup_dcookie", args(0, 0, 0)),        // gone from Linux 6.10: ENOSYS
		p("setns", args(badFD, 0)),                // EBADF
		p("unshare", args(0xdead0000)),            // EINVAL
		p("io_uring_setup", args(0, 0)),           // EINVAL
		p("io_uring_enter", args(badFD, 0, 0, 0)), // EBADF
		p("io_uring_register", args(badFD, 0, 0)), // EBADF
		p("personality", args(perLinux32)),        // harmless in a helper
		// CLONE_NEWNS with CLONE_FS is EINVAL without the filter.
		p("clone", args(unix.CLONE_NEWNS|unix.CLONE_FS|uintptr(unix.SIGCHLD))),
		p("clone", args(unix.CLONE_NEWUSER|unix.CLONE_NEWNS|unix.CLONE_FS)),
		p("ioctl", args(badFD, unix.TIOCSTI, 0)),
		p("ioctl", args(badFD, unix.TIOCLINUX, 0)),
		p("ioctl", args(badFD, 1<<32|unix.TIOCSTI, 0)), // the kernel reads the low 32 bits
		{"clone3", args(0, 0), unix.ENOSYS},            // NULL, size 0: EINVAL without the filter
	}
	if runtime.GOARCH == "amd64" {
		ps = append(ps, p("iopl", args(4)), p("ioperm", args(0x10000, 1, 0)))
	}
	return ps
}

// TestSeccompHelper is the helper process (skipped unless switched on): it
// installs the filter or not, makes each probe and prints "name errno",
// then does ordinary work and prints "ok" for each step that succeeds.
func TestSeccompHelper(t *testing.T) {
	mode := os.Getenv(seccompHelperEnv)
	if mode == "" {
		t.Skip("the helper process of TestSeccompDenies")
	}
	if mode == "filter" {
		if err := installSeccomp(); err != nil {
			fmt.Printf("install %v\n", err)
			os.Exit(2)
		}
	}
	info, err := arch.GetInfo("")
	if err != nil {
		fmt.Printf("arch %v\n", err)
		os.Exit(2)
	}
	for _, pr := range probes() {
		nr, ok := info.SyscallNames[pr.name]
		if !ok {
			fmt.Printf("probe %s unknown\n", pr.name)
			continue
		}
		a := pr.args()
		_, _, errno := unix.Syscall6(uintptr(nr), a[0], a[1], a[2], a[3], a[4], a[5])
		fmt.Printf("probe %s %d\n", pr.name, int(errno))
	}
	// personality's query and PER_LINUX stay allowed.
	if _, _, errno := unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0); errno == 0 {
		fmt.Println("ok personality-query")
	}
	// Ordinary work: fork and exec (clone without CLONE_NEW*; sh's
	// posix_spawn falls back from clone3's ENOSYS), threads, files,
	// sockets, pipes.
	if out, err := exec.Command("/bin/sh", "-c", "echo forked").Output(); err == nil && strings.TrimSpace(string(out)) == "forked" {
		fmt.Println("ok exec")
	}
	if out, err := exec.Command("/bin/sh", "-c", "(echo sub) | cat").Output(); err == nil && strings.TrimSpace(string(out)) == "sub" {
		fmt.Println("ok subshell")
	}
	// Threads: each goroutine locked to its thread makes the runtime
	// clone(2) another one (CLONE_THREAD and friends, no CLONE_NEW*).
	var started, release sync.WaitGroup
	var threads sync.Map
	release.Add(1)
	for i := 0; i < 8; i++ {
		started.Add(1)
		go func() {
			runtime.LockOSThread()
			threads.Store(unix.Gettid(), true)
			started.Done()
			release.Wait()
		}()
	}
	started.Wait()
	release.Done()
	n := 0
	threads.Range(func(any, any) bool { n++; return true })
	if n == 8 {
		fmt.Println("ok threads")
	}
	// Real runtimes: Node.js (libuv's thread pool and io_uring fallback,
	// child_process) and Python (threads, subprocess).
	if node, err := exec.LookPath("node"); err == nil {
		js := `const {execFileSync} = require("child_process"); require("fs").promises.readFile("/proc/self/status").then(() => console.log(execFileSync("/bin/sh", ["-c", "echo node"]).toString().trim()))`
		if out, err := exec.Command(node, "-e", js).Output(); err == nil && strings.TrimSpace(string(out)) == "node" {
			fmt.Println("ok node")
		} else {
			fmt.Printf("failed node %v %q\n", err, out)
		}
	} else {
		fmt.Println("ok node") // not installed: nothing to check
	}
	if py, err := exec.LookPath("python3"); err == nil {
		src := "import threading, subprocess\nt = threading.Thread(target=lambda: None); t.start(); t.join()\nprint(subprocess.run(['/bin/sh', '-c', 'echo python'], capture_output=True, text=True).stdout.strip())"
		if out, err := exec.Command(py, "-c", src).Output(); err == nil && strings.TrimSpace(string(out)) == "python" {
			fmt.Println("ok python")
		} else {
			fmt.Printf("failed python %v %q\n", err, out)
		}
	} else {
		fmt.Println("ok python")
	}
	dir := os.Getenv("TOOLHOST_NSINIT_SECCOMP_DIR")
	f := filepath.Join(dir, "file")
	if err := os.WriteFile(f, []byte("x"), 0o600); err == nil {
		if b, err := os.ReadFile(f); err == nil && string(b) == "x" {
			fmt.Println("ok file")
		}
	}
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		done := make(chan bool, 1)
		go func() {
			c, err := ln.Accept()
			if err == nil {
				c.Close()
			}
			done <- err == nil
		}()
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			c.Close()
			if <-done {
				fmt.Println("ok socket")
			}
		}
		ln.Close()
	}
	os.Exit(0)
}

func runSeccompHelper(t *testing.T, mode string) map[string][]unix.Errno {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSeccompHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), seccompHelperEnv+"="+mode, "TOOLHOST_NSINIT_SECCOMP_DIR="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper (%s): %v\nstdout:\n%s\nstderr:\n%s", mode, err, out, stderr.Bytes())
	}
	got := map[string][]unix.Errno{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "probe":
			var e int
			if _, err := fmt.Sscan(f[2], &e); err != nil {
				t.Fatalf("helper line %q", sc.Text())
			}
			got[f[1]] = append(got[f[1]], unix.Errno(e))
		case len(f) == 2 && f[0] == "ok":
			got["ok "+f[1]] = nil
		case len(f) > 0 && f[0] == "failed":
			t.Logf("helper (%s): %s", mode, sc.Text())
		}
	}
	return got
}

// TestSeccompDenies installs the filter in a helper process and makes each
// denied system call: EPERM (clone3: ENOSYS), while fork, exec, threads,
// files and sockets still work. The same helper without the filter shows
// that each probe's result comes from the filter, not from the arguments.
func TestSeccompDenies(t *testing.T) {
	if !SeccompSupported() {
		t.Skip("the kernel offers no seccomp filters")
	}
	filtered := runSeccompHelper(t, "filter")
	plain := runSeccompHelper(t, "none")
	want := map[string][]unix.Errno{}
	for _, pr := range probes() {
		want[pr.name] = append(want[pr.name], pr.want)
	}
	for name, w := range want {
		g := filtered[name]
		if len(g) != len(w) {
			t.Errorf("%s: helper made %d probes, want %d (%v)", name, len(g), len(w), g)
			continue
		}
		for i := range w {
			if g[i] != w[i] {
				t.Errorf("%s (probe %d) under the filter: %v (errno %d), want %v", name, i, g[i], int(g[i]), w[i])
			}
			if p := plain[name]; len(p) > i && p[i] == w[i] {
				t.Logf("%s (probe %d) fails with %v without the filter too: this probe does not tell", name, i, w[i])
			}
		}
	}
	for _, ok := range []string{"personality-query", "exec", "subshell", "threads", "node", "python", "file", "socket"} {
		if _, found := filtered["ok "+ok]; !found {
			t.Errorf("%s failed under the filter", ok)
		}
	}
}

// seccompData is struct seccomp_data (include/uapi/linux/seccomp.h) laid
// out for golang.org/x/net/bpf's VM, which loads words in network byte
// order: each 32-bit word is written big-endian at its offset, so that the
// filter's loads see the values the kernel's would.
func seccompData(nr int, auditArch uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], uint32(nr))
	binary.BigEndian.PutUint32(b[4:], auditArch)
	for i, a := range args {
		off := 16 + 8*i
		binary.BigEndian.PutUint32(b[off:], uint32(a))       // low word (little-endian machines)
		binary.BigEndian.PutUint32(b[off+4:], uint32(a>>32)) // high word
	}
	return b
}

// TestSeccompFilterProgram runs the assembled filter in a BPF VM: another
// architecture's system calls kill the process (the i386 ABI on x86_64 would
// otherwise dodge a filter keyed on x86_64 numbers), x32's fail with
// ENOSYS, conditions on arguments look at all 64 bits.
func TestSeccompFilterProgram(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("the VM's data layout assumes a little-endian 64-bit machine")
	}
	raw, err := Filter()
	if err != nil {
		t.Fatal(err)
	}
	insts, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the filter does not disassemble")
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := arch.GetInfo("")
	nr := func(name string) int { return info.SyscallNames[name] }
	const (
		allow = unix.SECCOMP_RET_ALLOW
		eperm = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		nosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		kill  = unix.SECCOMP_RET_KILL_PROCESS
	)
	other := arch.I386.ID
	if runtime.GOARCH == "arm64" {
		other = arch.ARM.ID
	}
	for _, c := range []struct {
		name string
		data []byte
		want uint32
	}{
		{"read", seccompData(nr("read"), uint32(info.ID)), allow},
		{"mount", seccompData(nr("mount"), uint32(info.ID)), eperm},
		{"ptrace", seccompData(nr("ptrace"), uint32(info.ID)), eperm},
		{"clone plain", seccompData(nr("clone"), uint32(info.ID), uint64(unix.CLONE_VM|unix.CLONE_VFORK)|uint64(unix.SIGCHLD)), allow},
		{"clone thread", seccompData(nr("clone"), uint32(info.ID), uint64(unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|unix.CLONE_SIGHAND|unix.CLONE_THREAD|unix.CLONE_SYSVSEM)), allow},
		{"clone newuser", seccompData(nr("clone"), uint32(info.ID), unix.CLONE_NEWUSER), eperm},
		{"clone newnet", seccompData(nr("clone"), uint32(info.ID), unix.CLONE_NEWNET|uint64(unix.SIGCHLD)), eperm},
		{"clone3", seccompData(nr("clone3"), uint32(info.ID)), nosys},
		{"personality query", seccompData(nr("personality"), uint32(info.ID), 0xffffffff), allow},
		{"personality linux", seccompData(nr("personality"), uint32(info.ID), 0), allow},
		{"personality linux32", seccompData(nr("personality"), uint32(info.ID), perLinux32), eperm},
		{"personality high bits", seccompData(nr("personality"), uint32(info.ID), 1<<32), eperm},
		{"ioctl tiocsti", seccompData(nr("ioctl"), uint32(info.ID), 0, unix.TIOCSTI), eperm},
		{"ioctl tiocsti high bits", seccompData(nr("ioctl"), uint32(info.ID), 0, 1<<32|unix.TIOCSTI), eperm},
		{"ioctl tioclinux", seccompData(nr("ioctl"), uint32(info.ID), 0, unix.TIOCLINUX), eperm},
		{"ioctl fionread", seccompData(nr("ioctl"), uint32(info.ID), 0, unix.TIOCINQ), allow},
		{"other arch", seccompData(nr("read"), uint32(other)), kill},
		{"other arch mount", seccompData(26, uint32(other)), kill},
	} {
		got, err := vm.Run(c.data)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if uint32(got) != c.want {
			t.Errorf("%s: filter returns %#x, want %#x", c.name, got, c.want)
		}
	}
	if runtime.GOARCH == "amd64" {
		got, _ := vm.Run(seccompData(nr("read")|0x40000000, uint32(info.ID)))
		if uint32(got) != nosys {
			t.Errorf("x32 read: filter returns %#x, want ENOSYS %#x", got, nosys)
		}
	}
}

// TestSetRlimits sets the limits in a helper and reads them back.
func TestSetRlimits(t *testing.T) {
	if os.Getenv(seccompHelperEnv) == "rlimit" {
		if err := setRlimits(1<<30, 1000); err != nil {
			fmt.Println("setRlimits", err)
			os.Exit(2)
		}
		for _, r := range []struct {
			name string
			res  int
		}{{"as", unix.RLIMIT_AS}, {"nproc", unix.RLIMIT_NPROC}, {"core", unix.RLIMIT_CORE}} {
			var l unix.Rlimit
			if err := unix.Getrlimit(r.res, &l); err != nil {
				fmt.Println(r.name, err)
				os.Exit(2)
			}
			fmt.Printf("%s %d %d\n", r.name, l.Cur, l.Max)
		}
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSetRlimits$", "-test.count=1")
	cmd.Env = append(os.Environ(), seccompHelperEnv+"=rlimit")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	want := "as 1073741824 1073741824\nnproc 1000 1000\ncore 0 0\n"
	if string(out) != want {
		t.Errorf("helper's rlimits:\n%s\nwant:\n%s", out, want)
	}
}
