package native_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/sandbox/native"
	"github.com/toolhost/toolhost/transport"
)

// An escape is one attempt by testdata/hostileserver: a tool, its
// arguments and whether it must work ("ok: ...") or fail ("err: ...").
type escape struct {
	name string
	tool string
	args map[string]any
	ok   bool
	// not, when set, must not appear in the result (a secret's content).
	not string
	// want, when set, must appear in the result.
	want string
}

// runEscapes calls each escape on tr and checks its result.
func runEscapes(t *testing.T, tr transport.Transport, cases []escape) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := call(t, tr, c.tool, c.args)
			t.Logf("%s(%v) = %q", c.tool, c.args, got)
			switch {
			case c.ok && !strings.HasPrefix(got, "ok: "):
				t.Errorf("%s(%v) failed, want it to work: %q", c.tool, c.args, got)
			case !c.ok && !strings.HasPrefix(got, "err: "):
				t.Errorf("ESCAPE: %s(%v) worked inside the sandbox: %q", c.tool, c.args, got)
			case c.not != "" && strings.Contains(got, c.not):
				t.Errorf("ESCAPE: %s(%v) returned %q", c.tool, c.args, c.not)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("%s(%v) = %q, want it to contain %q", c.tool, c.args, got, c.want)
			}
		})
	}
}

// hostileSecret writes a secret file outside every mount and returns its
// path and content.
func hostileSecret(t *testing.T) (path, content string) {
	t.Helper()
	content = fmt.Sprintf("SECRET-%d-%d", os.Getpid(), time.Now().UnixNano())
	path = filepath.Join(t.TempDir(), "id_rsa")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, content
}

// TestHostileFilesystem: the hostile server, strict, with /data read-only
// and /work read-write, reads and writes what it is allowed to, and every
// other path fails: a secret outside the mounts by its host path, by ..,
// by symbolic links it makes in /work (absolute, relative, to /), by hard
// links, /etc/shadow, /root/.ssh, the repository, toolhost's /proc; a
// dangling symbolic link it plants in /work is followed inside its own
// root, so a write through it creates nothing on the host.
func TestHostileFilesystem(t *testing.T) {
	needStrict(t)
	bin := hostileBinary(t)
	secret, content := hostileSecret(t)
	ro, rw := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "visible.txt"), []byte("visible to the server"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOOLHOST_TEST_TOKEN", content)
	// Where a dangling link planted in /work points: free on the host (a
	// write through the link must not create it).
	plantTmp := filepath.Join(os.TempDir(), fmt.Sprintf("hostile-planted-%d", time.Now().UnixNano()))
	plantSecretDir := filepath.Join(filepath.Dir(secret), "planted")
	spec := native.Spec{Capabilities: sandbox.Capabilities{Mounts: []sandbox.Mount{
		{Guest: "/data", Host: ro, Mode: sandbox.MountReadOnly},
		{Guest: "/work", Host: rw, Mode: sandbox.MountReadWrite},
	}}}
	tr, _ := sandboxed(t, &spec, transport.Command{Path: bin, InheritEnv: inheritEnv})
	pid := strconv.Itoa(os.Getpid())
	runEscapes(t, tr, []escape{
		{name: "read allowed ro", tool: "read_file", args: map[string]any{"path": "/data/visible.txt"}, ok: true, want: "visible to the server"},
		{name: "write allowed rw", tool: "write_file", args: map[string]any{"path": "/work/out.txt", "text": "written"}, ok: true},
		{name: "write ro", tool: "write_file", args: map[string]any{"path": "/data/out.txt", "text": "x"}},
		{name: "write root", tool: "write_file", args: map[string]any{"path": "/evil", "text": "x"}},
		{name: "write runtime", tool: "write_file", args: map[string]any{"path": "/usr/evil", "text": "x"}},
		{name: "read secret", tool: "read_file", args: map[string]any{"path": secret}, not: content},
		{name: "read /etc/shadow", tool: "read_file", args: map[string]any{"path": "/etc/shadow"}},
		{name: "read ~/.ssh", tool: "read_file", args: map[string]any{"path": "/root/.ssh/id_rsa"}},
		{name: "list ~/.ssh", tool: "list_dir", args: map[string]any{"path": "/root/.ssh"}},
		{name: "read repository", tool: "read_file", args: map[string]any{"path": filepath.Join(testutil.Root(), "go.mod")}},
		{name: "dotdot", tool: "read_file", args: map[string]any{"path": "/work/../../../.." + secret}, not: content},
		{name: "symlink abs made", tool: "symlink", args: map[string]any{"target": secret, "link": "/work/abs"}, ok: true},
		{name: "symlink abs", tool: "read_file", args: map[string]any{"path": "/work/abs"}, not: content},
		{name: "symlink rel made", tool: "symlink", args: map[string]any{"target": "../../../../../../.." + secret, "link": "/work/rel"}, ok: true},
		{name: "symlink rel", tool: "read_file", args: map[string]any{"path": "/work/rel"}, not: content},
		{name: "symlink root made", tool: "symlink", args: map[string]any{"target": "/", "link": "/work/root"}, ok: true},
		{name: "symlink root", tool: "read_file", args: map[string]any{"path": "/work/root" + secret}, not: content},
		{name: "dangling made", tool: "symlink", args: map[string]any{"target": plantTmp, "link": "/work/dangling"}, ok: true},
		// The write lands in the server's private /tmp, not the host's.
		{name: "dangling write", tool: "write_file", args: map[string]any{"path": "/work/dangling", "text": "planted"}, ok: true},
		{name: "dangling into secret dir made", tool: "symlink", args: map[string]any{"target": plantSecretDir, "link": "/work/dangling2"}, ok: true},
		{name: "dangling into secret dir", tool: "write_file", args: map[string]any{"path": "/work/dangling2", "text": "planted"}},
		{name: "hardlink secret", tool: "hardlink", args: map[string]any{"target": secret, "link": "/work/hard"}},
		{name: "hardlink ro file", tool: "hardlink", args: map[string]any{"target": "/data/visible.txt", "link": "/work/hard2"}},
		{name: "hardlink passwd", tool: "hardlink", args: map[string]any{"target": "/etc/passwd", "link": "/work/hard3"}},
		{name: "toolhost environ", tool: "read_file", args: map[string]any{"path": "/proc/" + pid + "/environ"}, not: content},
		{name: "toolhost root", tool: "list_dir", args: map[string]any{"path": "/proc/" + pid + "/root/"}},
		{name: "proc/1/root", tool: "read_file", args: map[string]any{"path": "/proc/1/root" + secret}, not: content},
		{name: "env scrubbed", tool: "env", ok: true, not: content},
	})
	// What the server did, seen from the host.
	if b, err := os.ReadFile(filepath.Join(rw, "out.txt")); err != nil || string(b) != "written" {
		t.Errorf("the allowed write on the host: %q, %v", b, err)
	}
	for _, p := range []string{plantTmp, plantSecretDir, filepath.Join(ro, "out.txt")} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("ESCAPE: the server created %s on the host", p)
		}
	}
	if got := call(t, tr, "proc", map[string]any{"pid": os.Getpid()}); !strings.Contains(got, "pids: ok: 1 [1]") {
		t.Errorf("proc: %q; want the server alone in its /proc", got)
	}
}

// TestHostileNetwork: without allowed_hosts the hostile server has only
// its own loopback: toolhost's loopback services, a LAN address of the
// machine, the cloud metadata endpoint, a DNS name and an abstract Unix
// socket of toolhost's namespace are all unreachable, by raw TCP and by
// net/http.
func TestHostileNetwork(t *testing.T) {
	needStrict(t)
	bin := hostileBinary(t)
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "host loopback service") }))
	defer local.Close()
	// A service on every address, reached by the machine's LAN address.
	wild, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer wild.Close()
	go func() {
		for {
			c, err := wild.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	lan := lanAddr(t, wild.Addr().(*net.TCPAddr).Port)
	name := fmt.Sprintf("toolhost-hostile-%d", os.Getpid())
	abstractListener(t, name)
	// The same calls work outside the sandbox: the test is not vacuous.
	plain, _ := sandboxed(t, nil, transport.Command{Path: bin, InheritEnv: inheritEnv})
	for _, c := range []struct{ tool, arg, val string }{
		{"connect", "addr", local.Listener.Addr().String()}, {"connect", "addr", lan}, {"abstract_unix", "name", name},
	} {
		if got := call(t, plain, c.tool, map[string]any{c.arg: c.val}); !strings.HasPrefix(got, "ok: ") {
			t.Fatalf("unsandboxed %s(%s) failed: %q", c.tool, c.val, got)
		}
	}
	tr, l := sandboxed(t, &native.Spec{}, transport.Command{Path: bin, InheritEnv: inheritEnv})
	runEscapes(t, tr, []escape{
		{name: "host loopback", tool: "connect", args: map[string]any{"addr": local.Listener.Addr().String()}},
		{name: "host loopback http", tool: "http_get", args: map[string]any{"url": local.URL}, not: "host loopback service"},
		{name: "lan", tool: "connect", args: map[string]any{"addr": lan}},
		{name: "metadata", tool: "connect", args: map[string]any{"addr": "169.254.169.254:80"}},
		{name: "metadata http", tool: "http_get", args: map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}},
		{name: "dns name", tool: "http_get", args: map[string]any{"url": "http://example.com/"}},
		{name: "ipv6 loopback", tool: "connect", args: map[string]any{"addr": "[::1]:" + strconv.Itoa(wild.Addr().(*net.TCPAddr).Port)}},
		{name: "abstract unix", tool: "abstract_unix", args: map[string]any{"name": name}},
	})
	if d := l.Denials(); d.Count != 0 {
		t.Logf("denials without allowed_hosts: %+v", d)
	}
}

// lanAddr returns host:port for the machine's first non-loopback IPv4
// address (skips t when there is none).
func lanAddr(t *testing.T, port int) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return net.JoinHostPort(n.IP.String(), strconv.Itoa(port))
		}
	}
	t.Skip("no non-loopback IPv4 address")
	return ""
}

// TestHostileProcesses: the hostile server can neither signal nor trace
// toolhost (its PID is not in the server's namespace, and a signal
// toolhost catches never arrives), sees only itself in /proc, has no
// capabilities, no_new_privs and a seccomp filter, and each system call
// no MCP server needs fails; toolhost and another backend keep serving.
func TestHostileProcesses(t *testing.T) {
	needStrict(t)
	bin := hostileBinary(t)
	other, _ := sandboxed(t, nil, transport.Command{Path: testutil.Fixture(t), InheritEnv: inheritEnv})
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1)
	defer signal.Stop(sigs)
	tr, _ := sandboxed(t, &native.Spec{}, transport.Command{Path: bin, InheritEnv: inheritEnv})
	me := os.Getpid()
	runEscapes(t, tr, []escape{
		{name: "signal toolhost", tool: "signal", args: map[string]any{"pid": me, "sig": int(syscall.SIGUSR1)}},
		{name: "signal parent", tool: "signal", args: map[string]any{"pid": os.Getppid(), "sig": int(syscall.SIGUSR1)}},
		{name: "ptrace toolhost", tool: "ptrace", args: map[string]any{"pid": me}},
		{name: "whoami", tool: "whoami", ok: true, want: "CapEff:\t0000000000000000"},
		{name: "no_new_privs", tool: "whoami", ok: true, want: "NoNewPrivs:\t1"},
		{name: "seccomp", tool: "whoami", ok: true, want: "Seccomp:\t2"},
	})
	got := call(t, tr, "syscalls", nil)
	t.Logf("syscalls:\n%s", got)
	lines := strings.Split(got, "\n")
	if len(lines) < 10 {
		t.Fatalf("syscalls: %d lines, want one per call", len(lines))
	}
	for _, line := range lines {
		if !strings.Contains(line, ": err: ") {
			t.Errorf("ESCAPE: %s", line)
		}
	}
	// A signal that got through would be here by now: kill(2) returned.
	select {
	case s := <-sigs:
		t.Errorf("ESCAPE: toolhost received %v", s)
	default:
	}
	if got := call(t, other, "echo", map[string]any{"text": "still serving"}); got != "still serving" {
		t.Errorf("the other backend: %q", got)
	}
	if got := call(t, tr, "read_file", map[string]any{"path": "/proc/self/status"}); !strings.HasPrefix(got, "ok: ") {
		t.Errorf("the hostile server itself stopped serving: %q", got)
	}
}

// TestHostileLimits: a fork bomb (processes, then threads) and a memory
// balloon end at the server's limits, and the transport reports the
// session lost with ErrPidsLimit or ErrMemoryLimit, the limit in the
// message, about a second after the limit is reached; nothing of the
// server is left running.
func TestHostileLimits(t *testing.T) {
	needStrict(t)
	bin := hostileBinary(t)
	const memory, pids = 128 << 20, 32
	for _, c := range []struct {
		name string
		tool string
		args map[string]any
		want error
	}{
		{"fork bomb", "fork_bomb", map[string]any{"n": 1000}, native.ErrPidsLimit},
		{"thread bomb", "fork_bomb", map[string]any{"n": 1000, "threads": true}, native.ErrPidsLimit},
		{"balloon", "balloon", map[string]any{"mib": 1024}, native.ErrMemoryLimit},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := native.Spec{Capabilities: sandbox.Capabilities{Memory: memory}, Pids: pids}
			tr, _ := sandboxed(t, &spec, transport.Command{Path: bin, InheritEnv: inheritEnv})
			start := time.Now()
			got, cerr := tryCall(tr, c.tool, c.args)
			lost := lostError(t, tr)
			took := time.Since(start)
			t.Logf("%s: call %q, %v; lost after %v: %v", c.name, got, cerr, took, lost)
			if !errors.Is(lost, c.want) {
				t.Errorf("Lost() = %v; want %v", lost, c.want)
			}
			if !errors.Is(lost, transport.ErrConnectionLost) {
				t.Errorf("Lost() = %v; want ErrConnectionLost too", lost)
			}
			if cerr != nil && !errors.Is(cerr, c.want) && !errors.Is(cerr, transport.ErrConnectionLost) {
				t.Errorf("the call's error %v: want %v or ErrConnectionLost", cerr, c.want)
			}
			limit := fmt.Sprintf("limit of %d processes", pids)
			if c.want == native.ErrMemoryLimit {
				limit = "memory limit 128MiB"
			}
			if !strings.Contains(lost.Error(), limit) {
				t.Errorf("Lost() = %v; want the limit (%s) in the message", lost, limit)
			}
			if took > 10*time.Second {
				t.Errorf("the server ran %v after the call began; want about a second", took)
			}
			tr.Close()
			noneRunning(t, bin)
		})
	}
}

// TestHostileNothingLeft: the hostile server and the processes it started
// are gone after Close, and after a SIGKILL of the toolhost process that
// started them (a re-executed copy of this test binary, which runs
// TestHostileHelperToolhost).
func TestHostileNothingLeft(t *testing.T) {
	needStrict(t)
	bin := hostileBinary(t)
	tr, _ := sandboxed(t, &native.Spec{Pids: 64}, transport.Command{Path: bin, InheritEnv: inheritEnv})
	if got := call(t, tr, "fork_bomb", map[string]any{"n": 5}); got != "ok: started 5 processes" {
		t.Fatalf("fork_bomb(5): %q", got)
	}
	if n := len(running(bin)); n != 6 {
		t.Errorf("%d processes run the fixture; want the server and its 5 children", n)
	}
	if err := tr.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	noneRunning(t, bin)

	// SIGKILL of toolhost.
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostileHelperToolhost$", "-test.v")
	cmd.Env = append(os.Environ(), "HOSTILE_HELPER="+bin)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = tbWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	ready := false
	for sc.Scan() {
		t.Log("helper: " + sc.Text())
		if strings.Contains(sc.Text(), "HELPER READY") {
			ready = true
			break
		}
	}
	if !ready {
		t.Fatal("the helper toolhost did not get ready")
	}
	if n := len(running(bin)); n != 6 {
		t.Errorf("%d processes run the fixture under the helper; want 6", n)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, out)
	noneRunning(t, bin)
}

// TestHostileHelperToolhost is the toolhost process TestHostileNothingLeft
// kills: it starts the hostile server sandboxed, makes it start five
// children, says so and waits to be killed.
func TestHostileHelperToolhost(t *testing.T) {
	bin := os.Getenv("HOSTILE_HELPER")
	if bin == "" {
		t.Skip("run by TestHostileNothingLeft")
	}
	tr, _ := sandboxed(t, &native.Spec{Pids: 64}, transport.Command{Path: bin, InheritEnv: inheritEnv})
	if got := call(t, tr, "fork_bomb", map[string]any{"n": 5}); got != "ok: started 5 processes" {
		t.Fatalf("fork_bomb(5): %q", got)
	}
	fmt.Println("HELPER READY")
	<-tr.Done()
}

// srtCLI returns the CLI of the pinned sandbox-runtime (testdata/srt, which
// `make srt` installs), or skips t when it or what it runs on (node,
// bubblewrap, socat, ripgrep) is missing.
func srtCLI(t *testing.T) string {
	t.Helper()
	testutil.NeedNPM(t)
	for _, p := range []string{"node", "bwrap", "socat", "rg"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("srt needs %s: install Node.js and `apt-get install bubblewrap socat ripgrep`", p)
		}
	}
	cli := filepath.Join(testutil.Root(), "testdata", "srt", "node_modules", "@anthropic-ai", "sandbox-runtime", "dist", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		t.Skip("testdata/srt is not installed: run make srt")
	}
	return cli
}

// compareCase is one row of the comparison: an escape and how to tell
// that it was contained from its result text.
type compareCase struct {
	row  string
	tool string
	args map[string]any
	// contained reports whether the result shows the attempt failed;
	// nil: the result starts with "err: ".
	contained func(got string) bool
	// offContains: the default containment of an unsandboxed server (its
	// own PID namespace and /proc, transport.Containment) already
	// contains it, or this machine's network does.
	offContains bool
	// fresh: run it on a server of its own (a limit kills the server).
	fresh bool
	// setup: a step the next case needs, not an escape ("made" or
	// "refused" in the table).
	setup bool
}

// TestHostileCompareSrt runs the same hostile cases with no sandbox,
// in toolhost's strict sandbox and under Anthropic's sandbox-runtime (srt:
// bubblewrap, socat proxies, a seccomp filter for Unix sockets) with
// settings as close as srt allows (read denied from / and allowed again
// for the runtime and the two directories, writes to the rw directory,
// no network), and prints the table docs/THREAT-MODEL.md records. It
// checks that toolhost's sandbox contains every case and that the
// unsandboxed run escapes in each (so no case is vacuous); srt's column is
// reported, not checked. Every case is harmless where it works: signals
// and ptrace go to a sleeping victim process, the fork bomb and balloon
// are bounded. The table in docs/THREAT-MODEL.md comes from
//
//	TOOLHOST_NPM_TESTS=1 go test -v -run TestHostileCompareSrt ./sandbox/native
func TestHostileCompareSrt(t *testing.T) {
	needStrict(t)
	cli := srtCLI(t)
	bin := hostileBinary(t)
	secret, content := hostileSecret(t)
	ro, rw := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "visible.txt"), []byte("visible"), 0o644); err != nil {
		t.Fatal(err)
	}
	victim := exec.Command("sleep", "300")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer victim.Wait()
	defer victim.Process.Kill()
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "host loopback service") }))
	defer local.Close()
	name := fmt.Sprintf("toolhost-compare-%d", os.Getpid())
	abstractListener(t, name)
	vpid := victim.Process.Pid
	noSecret := func(got string) bool { return !strings.Contains(got, content) }
	cases := []compareCase{
		{row: "read a file outside the allowed paths (a secret in $TMPDIR)", tool: "read_file", args: map[string]any{"path": secret}, contained: noSecret},
		{row: "read /etc/shadow", tool: "read_file", args: map[string]any{"path": "/etc/shadow"}},
		{row: "read the repository (the user's files)", tool: "read_file", args: map[string]any{"path": filepath.Join(testutil.Root(), "go.mod")}},
		{row: "write outside the rw path", tool: "write_file", args: map[string]any{"path": filepath.Join(ro, "out.txt"), "text": "x"}},
		{row: "(set-up: the server makes a symbolic link in the rw path to the secret)", tool: "symlink", args: map[string]any{"target": secret, "link": filepath.Join(rw, "abs")}, setup: true},
		{row: "read the secret through that link", tool: "read_file", args: map[string]any{"path": filepath.Join(rw, "abs")}, contained: noSecret},
		{row: "hard link to a file outside, made in the rw path", tool: "hardlink", args: map[string]any{"target": secret, "link": filepath.Join(rw, "hard")}},
		{row: "another process's /proc (environ)", tool: "read_file", args: map[string]any{"path": fmt.Sprintf("/proc/%d/environ", os.Getpid())}, offContains: true},
		{row: "processes visible in /proc", tool: "proc", args: map[string]any{"pid": os.Getpid()}, offContains: true, contained: func(got string) bool {
			for _, l := range strings.Split(got, "\n") {
				if strings.HasPrefix(l, "pids: ok: ") {
					n, _ := strconv.Atoi(strings.Fields(strings.TrimPrefix(l, "pids: ok: "))[0])
					return n < 10
				}
			}
			return true
		}},
		{row: "signal a host process (SIGCONT, harmless)", tool: "signal", args: map[string]any{"pid": vpid, "sig": int(syscall.SIGCONT)}, offContains: true},
		{row: "ptrace a host process", tool: "ptrace", args: map[string]any{"pid": vpid}, offContains: true},
		{row: "TCP to a host loopback service", tool: "connect", args: map[string]any{"addr": local.Listener.Addr().String()}},
		{row: "HTTP to the cloud metadata address", tool: "http_get", args: map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}, offContains: true, contained: func(got string) bool {
			return !strings.HasPrefix(got, "ok: 200")
		}},
		{row: "abstract Unix socket of the host namespace", tool: "abstract_unix", args: map[string]any{"name": name}},
		{row: "system calls (mount, unshare, setns, chroot, keyctl, bpf, modules, open_by_handle_at)", tool: "syscalls", contained: func(got string) bool {
			return !strings.Contains(got, ": ok")
		}},
		{row: "capabilities", tool: "whoami", contained: func(got string) bool { return strings.Contains(got, "CapEff:\t0000000000000000") }},
		{row: "fork bomb (300 processes; limit 64)", tool: "fork_bomb", args: map[string]any{"n": 300}, fresh: true},
		{row: "memory balloon (512 MiB; limit 256 MiB)", tool: "balloon", args: map[string]any{"mib": 512}, fresh: true},
	}
	spec := native.Spec{Capabilities: sandbox.Capabilities{Memory: 256 << 20, Mounts: []sandbox.Mount{
		{Guest: ro, Host: ro, Mode: sandbox.MountReadOnly},
		{Guest: rw, Host: rw, Mode: sandbox.MountReadWrite},
	}}, Pids: 64}
	settings := filepath.Join(t.TempDir(), "srt-settings.json")
	srtJSON := fmt.Sprintf(`{"filesystem":{"denyRead":["/"],"allowRead":["/usr","/lib","/lib64","/bin","/etc/ld.so.cache","/etc/ssl",%q,%q,%q,%q],"allowWrite":[%q],"denyWrite":[]},"network":{"allowedDomains":[],"deniedDomains":[]}}`,
		filepath.Dir(filepath.Dir(cli)), filepath.Dir(bin), ro, rw, rw)
	if err := os.WriteFile(settings, []byte(srtJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("srt settings: %s", srtJSON)
	type column struct {
		name string
		run  func(t *testing.T) transport.Transport
	}
	start := func(t *testing.T, spec *native.Spec, cmd transport.Command) transport.Transport {
		tr, _ := sandboxed(t, spec, cmd)
		return tr
	}
	cols := []column{
		{"off", func(t *testing.T) transport.Transport {
			return start(t, nil, transport.Command{Path: bin, InheritEnv: inheritEnv})
		}},
		{"toolhost strict", func(t *testing.T) transport.Transport {
			return start(t, &spec, transport.Command{Path: bin, InheritEnv: inheritEnv})
		}},
		{"srt", func(t *testing.T) transport.Transport {
			return start(t, nil, transport.Command{Path: "node", Args: []string{cli, "--settings", settings, bin}, InheritEnv: inheritEnv})
		}},
	}
	results := make([][]string, len(cases))
	for ci, col := range cols {
		t.Run(col.name, func(t *testing.T) {
			os.Remove(filepath.Join(rw, "abs"))
			os.Remove(filepath.Join(rw, "hard"))
			var tr transport.Transport
			for i, c := range cases {
				if tr == nil || c.fresh {
					tr = col.run(t)
				}
				got, err := tryCall(tr, c.tool, c.args)
				var contained bool
				switch {
				case err != nil:
					// The server died (a limit): contained; start another.
					got, contained, tr = "call failed: "+err.Error(), true, nil
				case c.contained != nil:
					contained = c.contained(got)
				default:
					contained = strings.HasPrefix(got, "err: ")
				}
				mark := "escaped"
				switch {
				case c.setup && contained:
					mark, contained = "refused", true
				case c.setup:
					mark, contained = "made", true
				case contained:
					mark = "contained"
				}
				results[i] = append(results[i], mark)
				t.Logf("%s | %s | %s: %.600q", col.name, c.row, mark, got)
				switch {
				case ci == 1 && !contained:
					t.Errorf("ESCAPE under toolhost's sandbox: %s: %q", c.row, got)
				case ci == 0 && contained && !c.offContains && !c.setup:
					t.Errorf("not escaping without a sandbox (the case is vacuous): %s: %q", c.row, got)
				}
				if c.tool == "signal" && !testutil.Alive(vpid) {
					t.Fatalf("%s killed the victim: the later rows would be wrong", col.name)
				}
			}
		})
	}
	var b strings.Builder
	b.WriteString("\n| case | " + strings.Join([]string{cols[0].name, cols[1].name, cols[2].name}, " | ") + " |\n|---|---|---|---|\n")
	for i, c := range cases {
		fmt.Fprintf(&b, "| %s | %s |\n", c.row, strings.Join(results[i], " | "))
	}
	t.Log(b.String())
}

// TestHostileEgress: with allowed_hosts naming one loopback host
// literally, the hostile server reaches it and nothing else, whichever
// way it tries: directly (the transparent forward for the allowed one;
// Landlock refuses other ports), through the proxy with CONNECT by hand
// (a denied loopback port, the metadata address, a name: 403, each
// counted in Denials), and through net/http's proxy handling.
func TestHostileEgress(t *testing.T) {
	needStrict(t)
	allowed, denied := egressHosts(t)
	allowedAddr := strings.TrimPrefix(allowed.URL, "http://")
	deniedAddr := strings.TrimPrefix(denied.URL, "http://")
	spec := native.Spec{Capabilities: sandbox.Capabilities{Hosts: []string{allowedAddr}}}
	tr, l := sandboxed(t, &spec, transport.Command{Path: hostileBinary(t), InheritEnv: inheritEnv})
	is403 := func(got string) bool { return strings.HasPrefix(got, "ok: HTTP/1.1 403") }
	runEscapes(t, tr, []escape{
		{name: "allowed direct", tool: "http_get", args: map[string]any{"url": allowed.URL}, ok: true, want: "200 allowed host"},
		{name: "allowed via proxy", tool: "proxy_connect", args: map[string]any{"proxy": native.ProxyAddr, "target": allowedAddr}, ok: true, want: "HTTP/1.1 200"},
		{name: "denied direct", tool: "connect", args: map[string]any{"addr": deniedAddr}},
		{name: "denied http", tool: "http_get", args: map[string]any{"url": denied.URL}, not: "denied host"},
	})
	before := l.Denials().Count
	for _, target := range []string{deniedAddr, "169.254.169.254:80", "localhost:" + strings.Split(deniedAddr, ":")[1], "[::1]:" + strings.Split(deniedAddr, ":")[1], "denied.example:443"} {
		got := call(t, tr, "proxy_connect", map[string]any{"proxy": native.ProxyAddr, "target": target})
		t.Logf("CONNECT %s: %q", target, got)
		if !is403(got) {
			t.Errorf("ESCAPE: CONNECT %s through the proxy = %q; want 403", target, got)
		}
	}
	if d := l.Denials(); d.Count < before+5 || d.Last == "" {
		t.Errorf("denials %+v; want the 5 refused CONNECTs counted (from %d)", d, before)
	}
}

// abstractListener listens on the abstract Unix socket @name in toolhost's
// network namespace, accepting and closing every connection, until t ends.
func abstractListener(t *testing.T, name string) {
	t.Helper()
	ul, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ul.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}
