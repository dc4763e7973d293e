//go:build linux

package native

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/transport"
)

// withProbe makes Plan see m as the kernel's mechanisms for the test.
func withProbe(t *testing.T, m Mechanisms) {
	old := probe
	probe = func() Mechanisms { return m }
	t.Cleanup(func() { probe = old })
}

var fullKernel = Mechanisms{UserNS: true, Landlock: 7, Seccomp: true, Cgroup: "v1"}

// TestPlanSpecErrors: each malformed spec is ErrSpec, naming the key.
func TestPlanSpecErrors(t *testing.T) {
	withProbe(t, fullKernel)
	dir := t.TempDir()
	mount := func(guest, host string, mode sandbox.MountMode, quota int64) Spec {
		return Spec{Capabilities: sandbox.Capabilities{Mounts: []sandbox.Mount{{Guest: guest, Host: host, Mode: mode, Quota: quota}}}}
	}
	for name, tc := range map[string]struct {
		spec Spec
		want string
	}{
		"mode":           {Spec{Mode: "sometimes"}, `sandbox = "sometimes"`},
		"off":            {Spec{Mode: ModeOff}, `runs no native sandbox`},
		"memory":         {Spec{Capabilities: sandbox.Capabilities{Memory: -1}}, "memory is negative"},
		"pids":           {Spec{Pids: -1}, "pids is negative"},
		"command":        {Spec{Command: "no-such-program-anywhere"}, `command "no-such-program-anywhere" not found`},
		"relative guest": {mount("data", dir, 0, 0), "must be absolute and clean"},
		"unclean guest":  {mount("/data/../etc", dir, 0, 0), "must be absolute and clean"},
		"root guest":     {mount("/", dir, 0, 0), "cannot be /"},
		"proc guest":     {mount("/proc/x", dir, 0, 0), "/proc and /dev"},
		"relative host":  {mount("/data", "rel/dir", 0, 0), "is not absolute"},
		"missing host":   {mount("/data", filepath.Join(dir, "missing"), 0, 0), "host path"},
		"quota":          {mount("/data", dir, sandbox.MountReadWrite, 1024), "mount_quota is not supported"},
		"bad mode":       {mount("/data", dir, 7, 0), "neither ro nor rw"},
		"runtime":        {mount("/usr", dir, 0, 0), "the runtime set has this path"},
		"covers runtime": {mount("/etc", dir, 0, 0), "would cover /etc/"},
		"twice": {Spec{Capabilities: sandbox.Capabilities{Mounts: []sandbox.Mount{{Guest: "/a", Host: dir}, {Guest: "/a", Host: dir}}}},
			"given twice"},
	} {
		t.Run(name, func(t *testing.T) {
			s := tc.spec
			s.Name = "srv"
			if s.Mode == "" {
				s.Mode = ModeStrict
			}
			if s.Command == "" {
				s.Command = "/bin/sh"
			}
			_, err := s.Plan()
			if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"srv"`) {
				t.Fatalf("Plan: %v; want ErrSpec with %q", err, tc.want)
			}
		})
	}
}

// TestPlanStrictMissingMechanism: strict mode fails with ErrUnavailable
// naming what is missing and what to do; best-effort lists it in Missing
// and Lines; without user namespaces both modes fail.
func TestPlanStrictMissingMechanism(t *testing.T) {
	withProbe(t, Mechanisms{UserNS: true, Landlock: 3, Seccomp: false, Cgroup: "v1"})
	s := Spec{Name: "srv", Mode: ModeStrict, Command: "/bin/sh"}
	_, err := s.Plan()
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "Landlock ABI 7 (the kernel offers ABI 3) and seccomp") ||
		!strings.Contains(err.Error(), `sandbox = "best-effort"`) {
		t.Fatalf("strict Plan: %v", err)
	}
	s.Mode = ModeBestEffort
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Missing) != 2 {
		t.Fatalf("Missing %q", p.Missing)
	}
	if lines := strings.Join(p.Lines(), "\n"); !strings.Contains(lines, "missing (best-effort): Landlock ABI 7") {
		t.Fatalf("Lines:\n%s", lines)
	}
	withProbe(t, Mechanisms{Landlock: 7, Seccomp: true})
	for _, mode := range []Mode{ModeStrict, ModeBestEffort} {
		s.Mode = mode
		if _, err := s.Plan(); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "user namespaces") {
			t.Fatalf("%s without user namespaces: %v", mode, err)
		}
	}
}

// TestPlanRuntimeSet: the runtime set has the usrmerge links as links,
// /usr, the /etc entries that exist, the program's bin directory, a
// private HOME with the npm cache under it, /tmp, /proc and /dev, and the
// allowed paths, parents before children; Lines names each.
func TestPlanRuntimeSet(t *testing.T) {
	withProbe(t, fullKernel)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".npm"), 0o755); err != nil {
		t.Fatal(err)
	}
	prefix := t.TempDir()
	prog := filepath.Join(prefix, "bin", "server")
	if err := os.MkdirAll(filepath.Dir(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	s := Spec{Name: "srv", Mode: ModeStrict, Command: prog, Env: []string{"HOME=" + home},
		Capabilities: sandbox.Capabilities{Mounts: []sandbox.Mount{{Guest: "/work", Host: work, Mode: sandbox.MountReadWrite}}}}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Path{}
	var order []string
	for _, path := range p.Paths {
		got[path.Guest] = path
		order = append(order, path.Guest)
	}
	rHome, _ := filepath.EvalSymlinks(home)
	rPrefix, _ := filepath.EvalSymlinks(prefix)
	for guest, why := range map[string]string{"/usr": "runtime", filepath.Join(rPrefix, "bin"): "runtime (the program's installation)",
		home: "private (empty HOME)", filepath.Join(home, ".npm"): "runtime (npm cache; host files read-only, writes to a private layer)", "/tmp": "private",
		"/work": "allowed_paths", "/etc/passwd": "private (generated)", "/proc": "private (the server's PID namespace)"} {
		if got[guest].Why != why {
			t.Errorf("path %s: %+v; want why %q (paths %q)", guest, got[guest], why, order)
		}
	}
	if fi, err := os.Lstat("/bin"); err == nil && fi.Mode()&os.ModeSymlink != 0 && !strings.Contains(got["/bin"].Why, "symbolic link") {
		t.Errorf("/bin: %+v; want a symbolic link", got["/bin"])
	}
	if got["/work"].Mode != sandbox.MountReadWrite || got[filepath.Join(home, ".npm")].Mode != sandbox.MountReadOnly {
		t.Errorf("modes: /work %s, npm cache %s", got["/work"].Mode, got[filepath.Join(home, ".npm")].Mode)
	}
	_ = rHome
	idx := map[string]int{}
	for i, g := range order {
		idx[g] = i
	}
	if idx[home] > idx[filepath.Join(home, ".npm")] {
		t.Errorf("HOME is mounted after the cache under it: %q", order)
	}
	lines := strings.Join(p.Lines(), "\n")
	for _, want := range []string{"sandbox: strict", "path /work rw " + mustEval(t, work) + " (allowed_paths)", "hosts: none", "memory: 1GiB", "pids: 256", "mechanisms: user namespaces: yes, Landlock ABI 7, seccomp: yes"} {
		if !strings.Contains(lines, want) {
			t.Errorf("Lines lacks %q:\n%s", want, lines)
		}
	}
}

func mustEval(t *testing.T, p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestInstallDirs: a program in a bin directory brings that directory and
// the lib, libexec, share directories beside it, never the whole prefix (a
// project's bin/ must not expose the project), nor /, HOME or above it.
func TestInstallDirs(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"py/bin", "py/lib", "py/share", "proj/bin", "proj/.git", "home/bin", "home/lib"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "proj/.env"), []byte("SECRET=1"), 0o600); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	for _, tc := range []struct {
		prog string
		want []string
	}{
		{root + "/py/bin/python", []string{root + "/py/bin", root + "/py/lib", root + "/py/share"}},
		{root + "/proj/bin/server", []string{root + "/proj/bin"}},
		{root + "/home/bin/tool", []string{root + "/home/bin"}},
		{root + "/home/tool", []string{root + "/home/tool"}},
		{"/bin/sh", []string{"/bin"}},
		{root + "/tool", []string{root + "/tool"}}, // root is above HOME
	} {
		if got := installDirs(tc.prog, home); !slices.Equal(got, tc.want) {
			t.Errorf("installDirs(%q, %q) = %q; want %q", tc.prog, home, got, tc.want)
		}
	}
}

// TestLaunchErrors: a program the sandbox does not show is ErrSpec and
// permanent; a mount that fails in the child is ErrSetup naming the stage
// with its errno; a program that cannot be executed is ErrSetup at stage
// exec. Nothing is left running.
func TestLaunchErrors(t *testing.T) {
	needSandbox(t)
	dir := t.TempDir()
	gone := filepath.Join(dir, "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	s := Spec{Name: "srv", Mode: ModeStrict, Command: "/bin/sh",
		Capabilities: sandbox.Capabilities{Mounts: []sandbox.Mount{{Guest: "/data", Host: gone}}}}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	fds := openFDs(t)
	defer func() {
		if after := openFDs(t); after != fds {
			t.Errorf("open descriptors: %d before the failed launches, %d after", fds, after)
		}
	}()
	os.Remove(gone)
	r := launchOnly(t, p, "/bin/sh", "-c", "true")
	var se *SetupError
	if !errors.Is(r, ErrSetup) || !errors.As(r, &se) || se.Stage != "mount /data" || !strings.Contains(r.Error(), "no such file") {
		t.Fatalf("launch with a vanished mount: %v; want ErrSetup at stage mount /data", r)
	}

	r = launchOnly(t, p, dir+"/outside", "x")
	var pe *transport.PermanentError
	if !errors.Is(r, ErrSpec) || !errors.As(r, &pe) {
		t.Fatalf("launch of a program outside the sandbox: %v; want a permanent ErrSpec", r)
	}

	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	r = launchOnly(t, p, "/usr/bin/no-such-program", "x")
	if !errors.Is(r, ErrSetup) || !errors.As(r, &se) || !strings.HasPrefix(se.Stage, "exec ") {
		t.Fatalf("launch of a missing program: %v; want ErrSetup at stage exec", r)
	}
}

// launchOnly runs Launch the way the transport does and, when it
// succeeds, waits for the process; it returns Launch's error.
func launchOnly(t *testing.T, p *Plan, argv ...string) error {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Path = argv[0]
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		la, err := New(p, nil).Launch(cmd)
		if err == nil {
			la.Exited(cmd.Wait())
		}
		errc <- err
	}()
	return <-errc
}

func openFDs(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// TestPlanAllowedHome: an allowed path at HOME replaces the private HOME
// and the caches under it (their mount points would be made in the host
// directory).
func TestPlanAllowedHome(t *testing.T) {
	withProbe(t, fullKernel)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".npm"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := Spec{Name: "srv", Mode: ModeStrict, Command: "/bin/sh", Env: []string{"HOME=" + home},
		Capabilities: sandbox.Capabilities{Mounts: []sandbox.Mount{{Guest: home, Host: home, Mode: sandbox.MountReadWrite}}}}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range p.Paths {
		if under(path.Guest, home) && path.Why != "allowed_paths" {
			t.Errorf("under the allowed HOME: %+v", path)
		}
	}
}

// TestPlanProgramInAllowedPath: a program inside an allowed path is run
// from there (at its guest path), not bound again as an install prefix.
func TestPlanProgramInAllowedPath(t *testing.T) {
	withProbe(t, fullKernel)
	project := mustEval(t, t.TempDir())
	prog := filepath.Join(project, "bin", "server")
	if err := os.MkdirAll(filepath.Dir(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := Spec{Name: "srv", Mode: ModeStrict, Command: prog,
		Capabilities: sandbox.Capabilities{Mounts: []sandbox.Mount{{Guest: "/work", Host: project, Mode: sandbox.MountReadWrite}}}}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := p.guestPath(prog); !ok || g != "/work/bin/server" {
		t.Fatalf("the program's guest path: %q, %v; want /work/bin/server", g, ok)
	}
}

// TestPlanRootWithoutCgroup: as root without a writable cgroup nothing
// limits pids (RLIMIT_NPROC does not bind uid 0): strict fails with
// ErrUnavailable, best-effort lists it as missing.
func TestPlanRootWithoutCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	withProbe(t, Mechanisms{UserNS: true, Landlock: 7, Seccomp: true})
	s := Spec{Name: "srv", Mode: ModeStrict, Command: "/bin/sh"}
	if _, err := s.Plan(); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "pids") {
		t.Errorf("strict: %v; want ErrUnavailable naming pids", err)
	}
	s.Mode = ModeBestEffort
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if p.PidsBy != "" || !strings.Contains(strings.Join(p.Missing, "; "), "pids") {
		t.Errorf("best-effort: PidsBy %q, Missing %q", p.PidsBy, p.Missing)
	}
}
