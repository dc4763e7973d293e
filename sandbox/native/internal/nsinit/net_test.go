package nsinit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// childEnv marks the re-executed test binary that runs setupNetwork in its
// new user and network namespaces.
const childEnv = "NSINIT_NET_TEST_CHILD"

var testListen = []string{"127.0.0.1:3128", "127.77.0.1:443", "[::1]:8081"}

// TestSetupNetworkChild is the child's side of TestSetupNetwork (skipped
// otherwise): in a new user+network namespace, it checks that the host's
// loopback is out of reach, runs setupNetwork, then connects to each
// listener it sent and writes its index.
func TestSetupNetworkChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("the child of TestSetupNetwork")
	}
	fail := func(format string, args ...any) {
		fmt.Printf("FAIL "+format+"\n", args...)
		os.Exit(1)
	}
	if err := setupNetwork(&Config{LoopbackUp: true, Listen: testListen}); err != nil {
		fail("setupNetwork: %v", err)
	}
	if c, err := net.DialTimeout("tcp", os.Getenv("HOST_ADDR"), 10*time.Second); err == nil {
		c.Close()
		fail("reached the host's loopback service %s from the new network namespace", os.Getenv("HOST_ADDR"))
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		fail("dialing the host's loopback service: %v, want connection refused (nothing listens in the namespace)", err)
	}
	flags, err := unix.FcntlInt(ListenFD, unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		fail("ListenFD flags %#x %v: want close-on-exec", flags, err)
	}
	for i, a := range testListen {
		c, err := net.DialTimeout("tcp", a, 10*time.Second)
		if err != nil {
			fail("dial %s inside: %v", a, err)
		}
		fmt.Fprintf(c, "%d\n", i)
		c.Close()
	}
	fmt.Println("OK")
	os.Exit(0)
}

// TestSetupNetwork: run in a new user and network namespace (unshare -rn),
// setupNetwork brings lo up, binds every address (127.77.0.1:443 needs
// CAP_NET_BIND_SERVICE there) and sends the listening sockets; the parent
// accepts on them the connections the child makes inside, and the host's
// loopback stays out of the child's reach.
func TestSetupNetwork(t *testing.T) {
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	parent, child := os.NewFile(uintptr(fds[0]), "parent"), os.NewFile(uintptr(fds[1]), "child")
	defer parent.Close()
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestSetupNetworkChild$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1", "HOST_ADDR="+host.Addr().String())
	cmd.ExtraFiles = []*os.File{devnull, devnull, child} // StatusFD, ConfigFD, ListenFD
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) {
			t.Skipf("no user and network namespaces here: %v", err)
		}
		t.Fatal(err)
	}
	child.Close()
	outc := make(chan string, 1)
	go func() { b, _ := io.ReadAll(out); outc <- string(b) }()
	defer func() {
		if t.Failed() {
			cmd.Process.Kill()
		}
		output := <-outc
		if err := cmd.Wait(); err != nil || !strings.Contains(output, "\nOK\n") {
			t.Errorf("child: %v\n%s", err, output)
		}
	}()

	lns, err := recvListeners(parent, len(testListen))
	if err != nil {
		t.Fatal(err)
	}
	for i, ln := range lns {
		if got := ln.Addr().String(); got != testListen[i] {
			t.Errorf("listener %d bound on %s, want %s", i, got, testListen[i])
		}
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(time.Minute))
		c, err := ln.Accept()
		if err != nil {
			t.Fatalf("accepting the child's connection to %s: %v", testListen[i], err)
		}
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		ln.Close()
		if line != fmt.Sprintf("%d\n", i) {
			t.Errorf("listener %d got %q", i, line)
		}
	}
}

// recvListeners is the parent's side (package native's receiveListeners,
// which this package cannot import).
func recvListeners(sock *os.File, n int) ([]net.Listener, error) {
	fc, err := net.FileConn(sock)
	if err != nil {
		return nil, err
	}
	defer fc.Close()
	oob := make([]byte, syscall.CmsgSpace(4*n))
	_, oobn, _, _, err := fc.(*net.UnixConn).ReadMsgUnix(make([]byte, 1), oob)
	if err != nil {
		return nil, err
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("control messages %v %v", msgs, err)
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != n {
		return nil, fmt.Errorf("got %d descriptors (%v), want %d", len(fds), err, n)
	}
	var lns []net.Listener
	for _, fd := range fds {
		f := os.NewFile(uintptr(fd), "listener")
		ln, err := net.FileListener(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

func TestSetupNetworkBadAddress(t *testing.T) {
	for _, a := range []string{"nonsense", "localhost:80", "127.0.0.1"} {
		err := setupNetwork(&Config{Listen: []string{a}})
		if err == nil || !strings.Contains(err.Error(), "egress listener") || !strings.Contains(err.Error(), a) {
			t.Errorf("Listen %q: %v, want an error naming the listener", a, err)
		}
	}
}
