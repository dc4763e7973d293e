//go:build linux

package native

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/transport"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "launch-sleep" {
		helperLaunchSleep()
		return
	}
	before := goleak.IgnoreCurrent()
	code := testutil.Main(m)
	if code == 0 {
		if err := goleak.Find(before); err != nil {
			println("goleak:", err.Error())
			code = 1
		}
	}
	os.Exit(code)
}

// needSandbox skips t where the kernel cannot run a strict sandbox.
func needSandbox(t *testing.T) {
	t.Helper()
	m := Probe()
	if !m.UserNS || m.Landlock < LandlockABI || !m.Seccomp {
		t.Skipf("the kernel does not offer a strict native sandbox: %+v", m)
	}
}

type result struct {
	stdout, stderr string
	launchErr      error
	waitErr        error
	exitErr        error
	pid            int
}

// runIn runs argv (argv[0] an absolute path) in a sandbox of spec, the way
// the Stdio transport does: Launch on a goroutine locked to its thread,
// Wait, then Exited.
func runIn(t *testing.T, spec Spec, argv ...string) result {
	t.Helper()
	if spec.Command == "" {
		spec.Command = argv[0]
	}
	if spec.Mode == "" {
		spec.Mode = ModeStrict
	}
	if spec.Name == "" {
		spec.Name = "test"
	}
	plan, err := spec.Plan()
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return runWith(t, New(plan, nil), spec.Env, argv...)
}

// runWith runs argv with launcher l, as runIn does.
func runWith(t *testing.T, l *Launcher, env []string, argv ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		var r result
		la, err := l.Launch(cmd)
		if err != nil {
			r.launchErr = err
			done <- r
			return
		}
		r.pid = cmd.Process.Pid
		r.waitErr = cmd.Wait()
		r.exitErr = la.Exited(r.waitErr)
		r.stdout, r.stderr = out.String(), errb.String()
		done <- r
	}()
	select {
	case r := <-done:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("the sandboxed command did not finish in 60s")
	}
	return result{}
}

func sh(t *testing.T, spec Spec, script string) result {
	t.Helper()
	return runIn(t, spec, "/bin/sh", "-c", script)
}

// TestLaunchShell: a shell runs inside; it is PID 1, sees its own /proc,
// has no capabilities and cannot read /root or the repository.
func TestLaunchShell(t *testing.T) {
	needSandbox(t)
	r := sh(t, Spec{}, `echo pid=$$; grep -E '^Cap(Eff|Prm|Inh|Bnd|Amb)' /proc/self/status; ls /proc | grep -cE '^[0-9]+$'; ls -d /root/.ssh 2>&1; cat `+testutil.Root()+`/go.mod 2>&1 | head -1; echo done`)
	if r.launchErr != nil {
		t.Fatal(r.launchErr)
	}
	t.Logf("stdout:\n%s\nstderr:\n%s\nwait: %v", r.stdout, r.stderr, r.waitErr)
	if r.waitErr != nil {
		t.Fatalf("shell failed: %v", r.waitErr)
	}
	for _, want := range []string{"pid=1\n", "CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "done"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if strings.Contains(r.stdout, "module ") {
		t.Error("the repository's go.mod is readable inside the sandbox")
	}
}

// TestLaunchMCPServer: the project's Go MCP server runs inside through the
// Stdio transport: it lists and calls tools, is PID 1 of its namespace
// whose /proc lists only it, and nothing of it is left after Close.
func TestLaunchMCPServer(t *testing.T) {
	needSandbox(t)
	fixture := testutil.Fixture(t)
	spec := Spec{Name: "fixture", Mode: ModeStrict, Command: fixture}
	plan, err := spec.Plan()
	if err != nil {
		t.Fatal(err)
	}
	tr := transport.NewStdio(transport.Command{Path: fixture, Args: []string{"-proc"}, InheritEnv: []string{"PATH"}},
		&transport.StdioOptions{Launcher: New(plan, nil), TerminateGrace: time.Second})
	defer tr.Close()
	if _, err := tr.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	tools, err := tr.ListTools(context.Background())
	if err != nil || len(tools) == 0 {
		t.Fatalf("ListTools: %d tools, %v", len(tools), err)
	}
	res, err := tr.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "inside"}})
	if err != nil {
		t.Fatal(err)
	}
	if txt := res.Content[0].(*mcp.TextContent).Text; txt != "inside" {
		t.Fatalf("echo: %q", txt)
	}
	res, err = tr.CallTool(context.Background(), &mcp.CallToolParams{Name: "proc_view", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Pid    int    `json:"pid"`
		Self   string `json:"self"`
		Listed []int  `json:"listed"`
		CapEff string `json:"capEff"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.Pid != 1 || v.Self != "1" || len(v.Listed) != 1 || v.Listed[0] != 1 || strings.Trim(v.CapEff, "0") != "" {
		t.Fatalf("proc_view inside the sandbox: %s; want pid 1 alone, no capabilities", b)
	}
	pid := tr.Pid()
	if err := tr.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	testutil.WaitGone(t, []int{pid}, 10*time.Second)
}

// TestLaunchAllowedPaths: an ro allowed path is readable and not
// writable, an rw one writable (the write lands on the host), and nothing
// else of the host is visible: not /root, not the repository, not
// toolhost's processes.
func TestLaunchAllowedPaths(t *testing.T) {
	needSandbox(t)
	roDir, rwDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(roDir, "in.txt"), []byte("readable\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Capabilities: sandbox.Capabilities{Mounts: []sandbox.Mount{
		{Guest: "/data", Host: roDir, Mode: sandbox.MountReadOnly},
		{Guest: "/work", Host: rwDir, Mode: sandbox.MountReadWrite},
	}}}
	r := sh(t, spec, `cat /data/in.txt
echo no > /data/out.txt 2>/dev/null && echo RO-WRITTEN
echo yes > /work/out.txt && echo rw-ok
touch /newfile 2>/dev/null && echo ROOT-WRITTEN
ls /root 2>/dev/null | grep -v . ; ls -A $HOME | wc -l
test -e `+testutil.Root()+` && echo REPO-VISIBLE
test -e /proc/`+strconv.Itoa(os.Getpid())+` && echo TOOLHOST-VISIBLE
cat /etc/shadow 2>/dev/null && echo SHADOW
echo end`)
	if r.launchErr != nil || r.waitErr != nil {
		t.Fatalf("launch %v, wait %v; stderr %s", r.launchErr, r.waitErr, r.stderr)
	}
	t.Logf("stdout:\n%s", r.stdout)
	for _, bad := range []string{"RO-WRITTEN", "ROOT-WRITTEN", "REPO-VISIBLE", "TOOLHOST-VISIBLE", "SHADOW"} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("inside the sandbox: %s", bad)
		}
	}
	if !strings.Contains(r.stdout, "readable\nrw-ok\n") || !strings.Contains(r.stdout, "end") {
		t.Errorf("stdout %q: want the ro file read and the rw write done", r.stdout)
	}
	if b, err := os.ReadFile(filepath.Join(rwDir, "out.txt")); err != nil || string(b) != "yes\n" {
		t.Errorf("the rw write on the host: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(roDir, "out.txt")); err == nil {
		t.Error("the ro write reached the host")
	}
}

// TestLaunchEscapes: symbolic links (absolute, relative with .., dangling)
// placed in an allowed path by the host side resolve inside the sandbox's
// root; a hard link to a file outside the mount cannot be made; /proc/1
// is the server itself.
func TestLaunchEscapes(t *testing.T) {
	needSandbox(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, to := range map[string]string{"abs": secret, "rel": "../../../../../../../../" + secret, "dangling": "/nonexistent/x", "root": "/"} {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	spec := Spec{Capabilities: sandbox.Capabilities{Mounts: []sandbox.Mount{{Guest: "/work", Host: dir, Mode: sandbox.MountReadWrite}}}}
	r := sh(t, spec, `cat /work/abs /work/rel /work/dangling /work/../../`+secret+` 2>/dev/null
ln /etc/passwd /work/hard 2>/dev/null && echo HARDLINKED
ln -s `+secret+` /work/new && cat /work/new 2>/dev/null
cat /proc/1/root`+secret+` 2>/dev/null
ls /work/root/ | tr '\n' ' '
echo end`)
	if r.launchErr != nil || r.waitErr != nil {
		t.Fatalf("launch %v, wait %v; stderr %s", r.launchErr, r.waitErr, r.stderr)
	}
	t.Logf("stdout:\n%s", r.stdout)
	if strings.Contains(r.stdout, "SECRET") || strings.Contains(r.stdout, "HARDLINKED") || !strings.Contains(r.stdout, "end") {
		t.Errorf("an escape worked: %q", r.stdout)
	}
}

// TestLaunchLandlockSecondWall: an abstract Unix socket of toolhost's
// namespace is unreachable; the Landlock ruleset holds inside the
// mounts: /proc is read-only to the server although procfs lets a process
// write its own /proc/self/comm; no_new_privs is set.
func TestLaunchLandlockSecondWall(t *testing.T) {
	needSandbox(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs /usr/bin/python3")
	}
	// An abstract Unix socket of toolhost's network namespace.
	name := fmt.Sprintf("toolhost-native-test-%d", os.Getpid())
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := sh(t, Spec{}, `grep NoNewPrivs /proc/self/status
/usr/bin/python3 -c '
import socket, errno
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\0`+name+`"); print("ABSTRACT-CONNECTED")
except OSError as e:
    print("abstract", errno.errorcode[e.errno])
' 
(echo x > /proc/self/comm) 2>&1 | grep -q 'Permission denied' && echo comm-denied`)
	if r.launchErr != nil || r.waitErr != nil {
		t.Fatalf("launch %v, wait %v; stderr %s", r.launchErr, r.waitErr, r.stderr)
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	if strings.Contains(r.stdout, "ABSTRACT-CONNECTED") {
		t.Error("the server reached an abstract Unix socket of toolhost's namespace")
	}
	for _, want := range []string{"NoNewPrivs:\t1", "comm-denied", "abstract "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
}

// TestLaunchMountTargetSymlink: a symbolic link that a previous run left
// in an rw allowed path, where a nested allowed path is mounted, is
// refused at set-up (the mount would land where the link points), with the
// stage and the reason.
func TestLaunchMountTargetSymlink(t *testing.T) {
	needSandbox(t)
	work, data := t.TempDir(), t.TempDir()
	if err := os.Symlink("/usr/bin", filepath.Join(work, "data")); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Capabilities: sandbox.Capabilities{Mounts: []sandbox.Mount{
		{Guest: "/work", Host: work, Mode: sandbox.MountReadWrite},
		{Guest: "/work/data", Host: data, Mode: sandbox.MountReadWrite},
	}}}
	r := sh(t, spec, "true")
	var se *SetupError
	if !errors.As(r.launchErr, &se) || se.Stage != "mount /work/data" || !strings.Contains(se.Msg, "symbolic link") {
		t.Fatalf("launch: %v; want a SetupError at mount /work/data naming the symbolic link", r.launchErr)
	}
}

// TestLaunchLimits: through the launcher, a memory balloon and a fork
// bomb end at their limits and Exited reports ErrMemoryLimit and
// ErrPidsLimit (the limits part's classification, fed by this launch).
func TestLaunchLimits(t *testing.T) {
	needSandbox(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs /usr/bin/python3")
	}
	if Probe().Cgroup == "" {
		t.Skip("no cgroup to create: the rlimits fallback stops the server without telling which limit")
	}
	spec := Spec{Capabilities: sandbox.Capabilities{Memory: 64 << 20}, Pids: 16}
	r := runIn(t, spec, "/usr/bin/python3", "-c", "b = [bytearray(8 << 20) for _ in range(64)]")
	if r.launchErr != nil {
		t.Fatal(r.launchErr)
	}
	if !errors.Is(r.exitErr, ErrMemoryLimit) {
		t.Errorf("memory balloon: wait %v, exited %v; want ErrMemoryLimit; stderr %s", r.waitErr, r.exitErr, r.stderr)
	}
	r = sh(t, spec, `i=0; while [ $i -lt 64 ]; do sleep 5 & i=$((i+1)); done; wait`)
	if r.launchErr != nil {
		t.Fatal(r.launchErr)
	}
	if !errors.Is(r.exitErr, ErrPidsLimit) {
		t.Errorf("fork bomb: wait %v, exited %v; want ErrPidsLimit; stderr %s", r.waitErr, r.exitErr, r.stderr)
	}
}

// helperEnv makes the test binary a helper process (see TestMain).
const helperEnv = "TOOLHOST_NATIVE_TEST_HELPER"

// helperLaunchSleep launches "sleep 1000" sandboxed, prints the server's
// PID and blocks until it is killed.
func helperLaunchSleep() {
	spec := Spec{Name: "sleep", Mode: ModeStrict, Command: "/bin/sleep"}
	plan, err := spec.Plan()
	if err != nil {
		println("plan:", err.Error())
		os.Exit(2)
	}
	runtime.LockOSThread()
	cmd := exec.Command("/bin/sleep", "1000")
	if _, err := New(plan, nil).Launch(cmd); err != nil {
		println("launch:", err.Error())
		os.Exit(2)
	}
	fmt.Println(cmd.Process.Pid)
	select {}
}

// TestLaunchToolhostKilled: when toolhost dies by SIGKILL, its sandboxed
// server (and with it the server's PID namespace) dies too: the death
// signal survives the child's set-up (dropping capabilities does not
// clear it).
func TestLaunchToolhostKilled(t *testing.T) {
	needSandbox(t)
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), helperEnv+"=launch-sleep")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	helper.Stderr = &errb
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer helper.Wait()
	defer helper.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		t.Fatalf("helper: %q, %v; stderr %s", line, err, errb.String())
	}
	if !testutil.Alive(pid) {
		t.Fatalf("the sandboxed sleep %d is not running", pid)
	}
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitGone(t, []int{pid}, 10*time.Second)
}

// TestLaunchEgress: with allowed_hosts, the server reaches an allowed
// loopback host of toolhost's namespace through the relay's transparent
// forward (a client that ignores the proxy variables), and not a denied
// one. Without allowed_hosts, nothing is reachable. (The relay's own tests cover the
// proxy.)
func TestLaunchEgress(t *testing.T) {
	needSandbox(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs /usr/bin/python3")
	}
	serve := func(body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) }))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	allowed, denied := serve("ALLOWED"), serve("DENIED")
	script := `
import urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
for u in ["http://` + allowed + `/", "http://` + denied + `/"]:
    try:
        print(u, opener.open(u, timeout=5).read().decode())
    except Exception as e:
        print(u, "refused", type(e).__name__)
`
	spec := Spec{Capabilities: sandbox.Capabilities{Hosts: []string{allowed}}}
	r := runIn(t, spec, "/usr/bin/python3", "-c", script)
	if r.launchErr != nil || r.waitErr != nil {
		t.Fatalf("launch %v, wait %v; stderr %s", r.launchErr, r.waitErr, r.stderr)
	}
	t.Logf("stdout:\n%s", r.stdout)
	if strings.Contains(r.stdout, "DENIED") {
		t.Error("the server reached a host not allowed")
	}
	if !strings.Contains(r.stdout, "ALLOWED") {
		t.Error("the server did not reach the allowed host")
	}
	r = runIn(t, Spec{}, "/usr/bin/python3", "-c", script)
	if r.launchErr != nil || r.waitErr != nil {
		t.Fatalf("launch %v, wait %v; stderr %s", r.launchErr, r.waitErr, r.stderr)
	}
	if strings.Contains(r.stdout, "ALLOWED") || strings.Contains(r.stdout, "DENIED") {
		t.Errorf("without allowed_hosts the server reached a host:\n%s", r.stdout)
	}
}

// TestLaunchOwnLoopback: a server reaches a service of its own on its
// namespace's loopback (a helper process, a browser's debugging port) at
// any port; that loopback is not the host's (TestLaunchEgress), so nothing
// outside is reached.
func TestLaunchOwnLoopback(t *testing.T) {
	needSandbox(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs /usr/bin/python3")
	}
	script := `
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
c = socket.create_connection(s.getsockname(), timeout=5)
a, _ = s.accept()
c.sendall(b"own loopback")
print(a.recv(64).decode())
`
	r := runIn(t, Spec{}, "/usr/bin/python3", "-c", script)
	if r.launchErr != nil || r.waitErr != nil {
		t.Fatalf("launch %v, wait %v; stderr %s", r.launchErr, r.waitErr, r.stderr)
	}
	if !strings.Contains(r.stdout, "own loopback") {
		t.Errorf("stdout %q; want the bytes sent over the server's own loopback", r.stdout)
	}
}

// TestLaunchSourceSwapped: a mount source replaced by a symbolic link after
// the plan (the launcher keeps its plan across restarts) is refused at the
// next start, not followed to where it points; and Plan refuses a mount
// whose host directory is inside a read-write one's, which would let the
// server make that swap itself.
func TestLaunchSourceSwapped(t *testing.T) {
	needSandbox(t)
	root := t.TempDir()
	data, secret := filepath.Join(root, "data"), filepath.Join(root, "secret")
	for _, d := range []string{data, secret} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(secret, "key"), []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Name: "swap", Mode: ModeStrict, Command: "/bin/sh", Capabilities: sandbox.Capabilities{Mounts: []sandbox.Mount{
		{Guest: "/data", Host: data, Mode: sandbox.MountReadOnly},
	}}}
	plan, err := spec.Plan()
	if err != nil {
		t.Fatal(err)
	}
	l := New(plan, nil)
	if r := runWith(t, l, nil, "/bin/sh", "-c", "ls /data"); r.launchErr != nil || r.waitErr != nil {
		t.Fatalf("first start: launch %v, wait %v", r.launchErr, r.waitErr)
	}
	if err := os.Remove(data); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("secret", data); err != nil {
		t.Fatal(err)
	}
	r := runWith(t, l, nil, "/bin/sh", "-c", "cat /data/key")
	if strings.Contains(r.stdout, "SECRET") {
		t.Fatal("the swapped source was followed: the secret is readable")
	}
	var se *SetupError
	if !errors.As(r.launchErr, &se) || se.Stage != "mount /data" || !strings.Contains(se.Msg, "symbolic link") {
		t.Fatalf("second start: %v; want a SetupError at mount /data naming the symbolic link", r.launchErr)
	}

	nested := Spec{Name: "nested", Mode: ModeStrict, Command: "/bin/sh", Capabilities: sandbox.Capabilities{Mounts: []sandbox.Mount{
		{Guest: "/work", Host: root, Mode: sandbox.MountReadWrite},
		{Guest: "/other", Host: secret, Mode: sandbox.MountReadOnly},
	}}}
	if _, err := nested.Plan(); !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("nested under a read-write mount: Plan %v; want ErrSpec", err)
	}
}
