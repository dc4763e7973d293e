package native

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/sandbox"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// limitsHelperEnv switches the test binary into a helper process of the
// limits tests ("balloon": allocate and touch memory without end).
const limitsHelperEnv = "TOOLHOST_NATIVE_LIMITS_HELPER"

// balloon keeps the helper's memory reachable.
var balloon [][]byte

// TestLimitsHelper is the helper process (skipped unless switched on).
func TestLimitsHelper(t *testing.T) {
	switch os.Getenv(limitsHelperEnv) {
	case "":
		t.Skip("a helper process of the limits tests")
	case "balloon":
		var b [1]byte
		os.Stdin.Read(b[:]) // the parent has put us in the cgroup
		for {
			chunk := make([]byte, 1<<20)
			for i := 0; i < len(chunk); i += 4096 {
				chunk[i] = 1
			}
			balloon = append(balloon, chunk)
		}
	case "hold":
		// A toolhost that makes a start's cgroup and is SIGKILLed.
		l, err := newLimits("held", 64<<20, 16)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Println(strings.Join(l.cg.dirs(), " "))
		select {}
	}
	os.Exit(2)
}

// needCgroup returns the hierarchy the tests make cgroups in, or skips the
// test where no cgroup is writable (fails under CI=true: CI has one).
func needCgroup(t *testing.T) cgroupHier {
	t.Helper()
	h := hierOnce()
	if h.version == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no writable cgroup under CI: %s", h.why)
		}
		t.Skipf("no writable cgroup (run as root, or with a delegated cgroup v2 subtree): %s", h.why)
	}
	return h
}

// gated starts argv with its stdin a pipe, so that the caller can put it
// in the cgroup before it does anything (it reads a line first).
func gated(t *testing.T, env []string, argv ...string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	return cmd, in
}

// runLimited runs a gated command under l: add, watch, release, wait,
// exited. It returns how long the command ran once released and exited's
// error.
func runLimited(t *testing.T, l *limits, cmd *exec.Cmd, in io.WriteCloser) (time.Duration, error) {
	t.Helper()
	if err := l.add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	l.watch(cmd.Process.Pid)
	// A bound for a monitor that does not stop the command, so that the
	// test fails instead of hanging; it only bounds how long failing takes.
	stopped := make(chan struct{})
	defer close(stopped)
	timer := time.AfterFunc(30*time.Second, func() {
		select {
		case <-stopped:
		default:
			t.Errorf("%v not stopped within 30s: killing it", cmd.Args)
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	defer timer.Stop()
	start := time.Now()
	if _, err := io.WriteString(in, "go\n"); err != nil {
		t.Fatal(err)
	}
	waitErr := cmd.Wait()
	ran := time.Since(start)
	return ran, l.exited(waitErr)
}

func assertRemoved(t *testing.T, l *limits) {
	t.Helper()
	for _, d := range l.cg.dirs() {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s still there after exited (%v)", d, err)
		}
	}
}

// TestLimitsMemoryBalloon: a process that allocates without end is killed
// at the memory limit and exited reports ErrMemoryLimit with the limit.
func TestLimitsMemoryBalloon(t *testing.T) {
	needCgroup(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const limit = 96 << 20
	l, err := newLimits("balloon", limit, 64)
	if err != nil {
		t.Fatal(err)
	}
	cmd, in := gated(t, []string{limitsHelperEnv + "=balloon"}, os.Args[0], "-test.run=^TestLimitsHelper$", "-test.count=1")
	ran, err := runLimited(t, l, cmd, in)
	t.Logf("balloon stopped after %v: %v", ran, err)
	if !errors.Is(err, ErrMemoryLimit) || !errors.Is(err, sandbox.ErrMemoryLimit) {
		t.Fatalf("exited = %v, want ErrMemoryLimit (and sandbox.ErrMemoryLimit)", err)
	}
	if !strings.Contains(err.Error(), "memory limit 96MiB exceeded") {
		t.Errorf("message %q does not give the limit", err)
	}
	assertRemoved(t, l)
}

// TestLimitsForkBomb: a fork bomb is stopped at the pids limit (every one
// of its processes killed, not left spinning at the limit) and exited
// reports ErrPidsLimit with the limit.
func TestLimitsForkBomb(t *testing.T) {
	needCgroup(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l, err := newLimits("bomb", 256<<20, 32)
	if err != nil {
		t.Fatal(err)
	}
	cmd, in := gated(t, nil, "/bin/sh", "-c", "read x; b() { b | b & }; b; exec sleep 1000")
	ran, err := runLimited(t, l, cmd, in)
	t.Logf("fork bomb stopped after %v: %v", ran, err)
	if !errors.Is(err, ErrPidsLimit) {
		t.Fatalf("exited = %v, want ErrPidsLimit", err)
	}
	if !strings.Contains(err.Error(), "32 processes and threads") {
		t.Errorf("message %q does not give the limit", err)
	}
	// The cgroup could be removed only once every bomb process was gone.
	assertRemoved(t, l)
}

// TestLimitsWithin: a server within its limits exits as it likes and
// exited classifies nothing; the cgroup is removed; a start that is never
// watched (it failed after add) is cleaned up too.
func TestLimitsWithin(t *testing.T) {
	needCgroup(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, script := range []string{"read x; echo fine", "read x; exit 3", "read x; kill -9 $$"} {
		l, err := newLimits("calm", 64<<20, 16)
		if err != nil {
			t.Fatal(err)
		}
		cmd, in := gated(t, nil, "/bin/sh", "-c", script)
		if _, err := runLimited(t, l, cmd, in); err != nil {
			t.Errorf("%q: exited = %v, want nil", script, err)
		}
		assertRemoved(t, l)
	}
	l, err := newLimits("unwatched", 64<<20, 16)
	if err != nil {
		t.Fatal(err)
	}
	cmd, in := gated(t, nil, "/bin/sh", "-c", "read x; sleep 1000")
	if err := l.add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	in.Close()
	cmd.Process.Kill()
	if err := l.exited(cmd.Wait()); err != nil {
		t.Errorf("unwatched: exited = %v, want nil", err)
	}
	assertRemoved(t, l)
}

// TestLimitsCgroupFiles: the cgroup is named after toolhost's pid, the
// server (sanitised) and a sequence number, and carries the limits.
func TestLimitsCgroupFiles(t *testing.T) {
	h := needCgroup(t)
	l, err := newLimits("we/ird name", 80<<20, 40)
	if err != nil {
		t.Fatal(err)
	}
	defer l.exited(nil)
	prefix := fmt.Sprintf("toolhost-%d-we_ird_name-", os.Getpid())
	if base := filepath.Base(l.cg.pids); !strings.HasPrefix(base, prefix) {
		t.Errorf("cgroup %s, want a name starting %s", base, prefix)
	}
	if filepath.Base(filepath.Dir(l.cg.pids)) != cgroupParent {
		t.Errorf("cgroup %s is not under %s", l.cg.pids, cgroupParent)
	}
	read := func(file string) string {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	want := map[string]string{filepath.Join(l.cg.pids, "pids.max"): "40"}
	if h.version == "v2" {
		want[filepath.Join(l.cg.mem, "memory.max")] = strconv.Itoa(80 << 20)
		want[filepath.Join(l.cg.mem, "memory.oom.group")] = "1"
	} else {
		want[filepath.Join(l.cg.mem, "memory.limit_in_bytes")] = strconv.Itoa(80 << 20)
		if _, err := os.Stat(filepath.Join(l.cg.mem, "memory.memsw.limit_in_bytes")); err == nil {
			want[filepath.Join(l.cg.mem, "memory.memsw.limit_in_bytes")] = strconv.Itoa(80 << 20)
		}
	}
	for file, w := range want {
		if got := read(file); got != w {
			t.Errorf("%s = %s, want %s", file, got, w)
		}
	}
	if as, nproc := l.rlimits(); as != 0 || nproc != 0 {
		t.Errorf("rlimits with a cgroup = %d, %d, want 0, 0", as, nproc)
	}
}

// TestLimitsStaleCgroups: at newLimits, the empty cgroups of a toolhost
// that no longer runs, and this process's own leftovers, are removed; a
// running toolhost's are not.
func TestLimitsStaleCgroups(t *testing.T) {
	h := needCgroup(t)
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(h.pidsDir, cgroupParent)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	defer unix.Rmdir(parent) // when empty: others may be using it
	stale := filepath.Join(parent, fmt.Sprintf("toolhost-%d-gone-1", dead.Process.Pid))
	leftover := filepath.Join(parent, fmt.Sprintf("toolhost-%d-leftover-999999", os.Getpid()))
	alive := filepath.Join(parent, fmt.Sprintf("toolhost-%d-alive-1", os.Getppid()))
	for _, d := range []string{stale, leftover, alive} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	defer os.Remove(alive)
	l, err := newLimits("fresh", 0, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer l.exited(nil)
	for d, want := range map[string]bool{stale: false, leftover: false, alive: true} {
		_, err := os.Stat(d)
		if got := err == nil; got != want {
			t.Errorf("%s exists: %v, want %v", filepath.Base(d), got, want)
		}
	}
}

// TestLimitsKilledToolhost: the cgroup of a toolhost that was SIGKILLed
// (it could not remove it) is removed by the next start of another.
func TestLimitsKilledToolhost(t *testing.T) {
	needCgroup(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLimitsHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), limitsHelperEnv+"=hold")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Kill()
	cmd.Wait()
	if err != nil || strings.HasPrefix(line, "error") {
		t.Fatalf("helper: %q, %v", line, err)
	}
	dirs := strings.Fields(line)
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("the killed helper's cgroup: %v", err)
		}
	}
	l, err := newLimits("next", 64<<20, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer l.exited(nil)
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the killed toolhost's cgroup %s is still there (%v)", d, err)
		}
	}
}

// TestLimitsConcurrentStarts: starts of many servers at once (each
// cleaning stale cgroups while the others make theirs) all get a working
// cgroup of their own.
func TestLimitsConcurrentStarts(t *testing.T) {
	needCgroup(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const n = 16
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			l, err := newLimits("hammer", 32<<20, 8)
			if err != nil {
				errs <- err
				return
			}
			for _, d := range l.cg.dirs() {
				if _, err := os.Stat(filepath.Join(d, "cgroup.procs")); err != nil {
					errs <- fmt.Errorf("a start's cgroup is gone before its exit: %w", err)
					l.exited(nil)
					return
				}
			}
			errs <- l.exited(nil)
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestLimitsRlimitFallback: without a writable cgroup the limits are the
// child's rlimits and nothing is watched.
func TestLimitsRlimitFallback(t *testing.T) {
	l, err := newLimitsIn(cgroupHier{why: "test"}, "plain", 512<<20, 100)
	if err != nil {
		t.Fatal(err)
	}
	if as, nproc := l.rlimits(); as != 512<<20 || nproc != 100 {
		t.Errorf("rlimits = %d, %d, want %d, 100", as, nproc, 512<<20)
	}
	if err := l.add(os.Getpid()); err != nil {
		t.Error(err)
	}
	l.watch(os.Getpid())
	if err := l.exited(errors.New("exit status 1")); err != nil {
		t.Errorf("exited = %v, want nil", err)
	}
}

// TestDetectCgroup finds the hierarchy in fake mountinfo and
// /proc/self/cgroup files over directories shaped like cgroup file
// systems.
func TestDetectCgroup(t *testing.T) {
	root := t.TempDir()
	mk := func(dir string, files map[string]string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(root, dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write := func(name, content string) string {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// v1, as on a machine with a hybrid layout (the unified hierarchy
	// without controllers).
	mk("v1/memory/svc/abc", nil)
	mk("v1/pids", nil)
	mk("v1/unified", map[string]string{"cgroup.controllers": ""})
	mi := write("mi1", fmt.Sprintf(`25 24 0:22 / %[1]s/v1 rw - tmpfs tmpfs rw
30 25 0:26 / %[1]s/v1/memory rw,relatime - cgroup cgroup rw,memory
31 25 0:27 / %[1]s/v1/pids rw,relatime - cgroup cgroup rw,pids
32 25 0:28 / %[1]s/v1/unified rw,relatime - cgroup2 cgroup2 rw
33 25 0:29 / %[1]s/v1/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
`, root))
	pc := write("pc1", "9:pids:/\n4:memory:/svc/abc\n2:cpu,cpuacct:/\n0::/\n")
	h := detectCgroup(mi, pc)
	if h.version != "v1" || h.memDir != filepath.Join(root, "v1/memory/svc/abc") || h.pidsDir != filepath.Join(root, "v1/pids") || h.memRel != "/svc/abc" {
		t.Errorf("v1: %+v", h)
	}
	// v2 at the root of the hierarchy: controllers enabled at setup.
	mk("v2", map[string]string{"cgroup.controllers": "cpu io memory pids", "cgroup.subtree_control": ""})
	mi2 := write("mi2", fmt.Sprintf("25 24 0:22 / %s/v2 rw - cgroup2 cgroup2 rw,nsdelegate\n", root))
	h = detectCgroup(mi2, write("pc2", "0::/\n"))
	if h.version != "v2" || !h.enable || h.memDir != filepath.Join(root, "v2") {
		t.Errorf("v2 root: %+v", h)
	}
	// v2 in a cgroup with memory and pids delegated to its children.
	mk("v2/app.service", map[string]string{"cgroup.controllers": "memory pids", "cgroup.subtree_control": "memory pids"})
	h = detectCgroup(mi2, write("pc3", "0::/app.service\n"))
	if h.version != "v2" || h.enable || h.memDir != filepath.Join(root, "v2/app.service") || h.pidsRel != "/app.service" {
		t.Errorf("v2 delegated: %+v", h)
	}
	// v2 in a cgroup not delegated, on a systemd machine: the hierarchy's
	// root (memory and pids enabled for its children) when writable.
	mk("v2/user.slice", map[string]string{"cgroup.controllers": "memory pids", "cgroup.subtree_control": "", "cgroup.type": "domain"})
	pc4 := write("pc4", "0::/user.slice\n")
	if err := os.WriteFile(filepath.Join(root, "v2/cgroup.subtree_control"), []byte("memory pids"), 0o644); err != nil {
		t.Fatal(err)
	}
	h = detectCgroup(mi2, pc4)
	if h.version != "v2" || h.enable || h.memDir != filepath.Join(root, "v2") || h.memRel != "/" {
		t.Errorf("v2 not delegated, root: %+v", h)
	}
	// v2 in a cgroup namespace whose root has processes (a container):
	// nothing (and no v1 either).
	mk("v2ns/ctr", map[string]string{"cgroup.controllers": "memory pids", "cgroup.subtree_control": "", "cgroup.type": "domain"})
	mi5 := write("mi5", fmt.Sprintf("25 24 0:22 /ctr %s/v2ns/ctr rw - cgroup2 cgroup2 rw\n", root))
	h = detectCgroup(mi5, write("pc5", "0::/ctr\n"))
	if h.version != "" || !strings.Contains(h.why, "not delegated") {
		t.Errorf("v2 namespace root with processes: %+v", h)
	}
	// A delegated parent (systemd's DelegateSubgroup=) is used; it needs
	// the delegate extended attribute, which tmpfs keeps as trusted.*
	// for root only.
	mk("v2/app.service/supervisor", map[string]string{"cgroup.controllers": "memory pids", "cgroup.subtree_control": "", "cgroup.type": "domain"})
	if err := unix.Setxattr(filepath.Join(root, "v2/app.service"), "trusted.delegate", []byte("1"), 0); err == nil {
		if err := os.WriteFile(filepath.Join(root, "v2/cgroup.subtree_control"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(root, "v2/cgroup.type"), []byte("domain"), 0o644)
		h = detectCgroup(mi2, write("pc6", "0::/app.service/supervisor\n"))
		if h.version != "v2" || h.memDir != filepath.Join(root, "v2/app.service") || h.pidsRel != "/app.service" {
			t.Errorf("v2 delegated parent: %+v", h)
		}
	} else {
		t.Logf("no trusted.* extended attributes here (%v): delegated parent case not checked", err)
	}
	// Escaped mount points.
	if ms := parseMountinfo([]byte(`30 25 0:26 / /sys/fs/cgroup/my\040mem rw - cgroup cgroup rw,memory`)); len(ms) != 1 || ms[0].point != "/sys/fs/cgroup/my mem" {
		t.Errorf("escaped mount point: %+v", ms)
	}
}

// TestProbeCgroup: this machine's answer, which CI requires to be a
// cgroup.
func TestProbeCgroup(t *testing.T) {
	v := probeCgroup()
	t.Logf("probeCgroup() = %q (%s)", v, hierOnce().why)
	if v == "" && os.Getenv("CI") == "true" {
		t.Errorf("no writable cgroup under CI: %s", hierOnce().why)
	}
}

// BenchmarkLimitsStart measures what the limits add to a server start and
// exit with a cgroup: making it (with the stale check), and removing it.
func BenchmarkLimitsStart(b *testing.B) {
	if hierOnce().version == "" {
		b.Skip("no writable cgroup")
	}
	for b.Loop() {
		l, err := newLimits("bench", 256<<20, 64)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.exited(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLimitsSetupError: a cgroup that cannot be set up is ErrSetup naming
// the file, and what was made is removed (a directory that is not a
// cgroup file system has no memory.limit_in_bytes to write).
func TestLimitsSetupError(t *testing.T) {
	dir := t.TempDir()
	h := cgroupHier{version: "v1", memDir: dir, pidsDir: dir, memRel: "/", pidsRel: "/"}
	l, err := newLimitsIn(h, "broken", 64<<20, 16)
	if !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "memory.limit_in_bytes") {
		t.Fatalf("newLimits = %v, %v; want ErrSetup naming memory.limit_in_bytes", l, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, cgroupParent)); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}
