package native

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/sandbox/native/internal/nsinit"
	"github.com/toolhost/toolhost/transport"
)

// setupTimeout bounds the child's set-up, from its start to the server's
// execve: 30s (it takes milliseconds; a stuck file system can hold it).
var setupTimeout = 30 * time.Second

// exe is the executable re-executed as the child: this one, as the kernel
// knows it.
const exe = "/proc/self/exe"

// cloneFlags are the namespaces of a sandboxed server: user, PID, mount,
// network, IPC and UTS (namespaces(7)).
const cloneFlags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET |
	syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS

// childCaps are the capabilities the child keeps across the execve of
// this executable (ambient, capabilities(7)) when toolhost is not uid 0:
// mounting (CAP_SYS_ADMIN), bringing lo up (CAP_NET_ADMIN), binding the
// relay's ports below 1024 (CAP_NET_BIND_SERVICE) and dropping the rest
// (CAP_SETPCAP). The child drops them all before the server's execve.
var childCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_NET_BIND_SERVICE, unix.CAP_SETPCAP}

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags:  cloneFlags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		Setpgid:     true,
		Pdeathsig:   syscall.SIGKILL,
		AmbientCaps: childCaps,
	}
}

// launched is one sandboxed process (transport.Launched).
type launched struct {
	lim *limits
	rel *relay
}

func (l *launched) Exited(waitErr error) error {
	l.rel.close()
	return l.lim.exited(waitErr)
}

func (l *Launcher) launch(cmd *exec.Cmd) (transport.Launched, error) {
	p := l.plan
	lim, err := newLimits(p.Spec.Name, p.Memory, p.Pids)
	if err != nil {
		return nil, permanent(err)
	}
	rel, err := newRelay(p.Spec.Hosts, l.logger, &l.den)
	if err != nil {
		lim.exited(nil)
		return nil, permanent(err)
	}
	release := func() {
		rel.close()
		lim.exited(nil)
	}
	as, nproc := lim.rlimits()
	cfg, err := p.config(cmd, rel, as, nproc)
	if err != nil {
		release()
		return nil, permanent(err)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		release()
		return nil, err
	}

	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		release()
		return nil, fmt.Errorf("%w: status pipe: %w", ErrSetup, err)
	}
	files = append(files, statusR, statusW)
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		closeAll()
		release()
		return nil, fmt.Errorf("%w: config pipe: %w", ErrSetup, err)
	}
	files = append(files, cfgR, cfgW)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		closeAll()
		release()
		return nil, fmt.Errorf("%w: listener socket pair: %w", ErrSetup, err)
	}
	lnParent, lnChild := os.NewFile(uintptr(fds[0]), "listeners"), os.NewFile(uintptr(fds[1]), "listeners-child")
	files = append(files, lnParent, lnChild)

	// The child is this executable with an empty environment; the
	// server's program, argv, env and dir travel in the Config. cmd gets
	// them back (the env with the launcher's additions) once started.
	path, args, dir := cmd.Path, cmd.Args, cmd.Dir
	cmd.Path, cmd.Args, cmd.Env, cmd.Dir = exe, []string{nsinit.Arg0}, []string{}, "/"
	cmd.ExtraFiles = []*os.File{statusW, cfgR, lnChild}
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	cmd.Path, cmd.Args, cmd.Env, cmd.Dir = path, args, cfg.Env, dir
	// The child has its copies of these.
	statusW.Close()
	cfgR.Close()
	lnChild.Close()
	if err != nil {
		closeAll()
		release()
		return nil, startError(p.Spec.Name, err)
	}
	abort := func(err error) (transport.Launched, error) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		closeAll()
		release()
		return nil, err
	}
	// A set-up that hangs (a stuck file system under a bind source, say)
	// is a start failure, not a hang.
	timer := time.AfterFunc(setupTimeout, func() { _ = cmd.Process.Kill() })
	if err := lim.add(cmd.Process.Pid); err != nil {
		timer.Stop()
		return abort(err)
	}
	// A failed write means the child is gone: its status says why.
	_, werr := cfgW.Write(b)
	cfgW.Close()
	var lns []net.Listener
	var lerr error
	if n := len(cfg.Listen); n > 0 && werr == nil {
		lns, lerr = receiveListeners(lnParent, n)
	}
	lnParent.Close()
	status, rerr := io.ReadAll(io.LimitReader(statusR, 4096))
	statusR.Close()
	if !timer.Stop() {
		status, rerr = nil, fmt.Errorf("the set-up took longer than %v and was stopped", setupTimeout)
	}
	if rerr != nil || len(status) > 0 || werr != nil || lerr != nil {
		for _, ln := range lns {
			ln.Close()
		}
		err := lerr
		switch {
		case len(status) > 0:
			err = parseStatus(p.Spec.Name, status)
		case rerr != nil:
			err = fmt.Errorf("%w: server %q: %w", ErrSetup, p.Spec.Name, rerr)
		case werr != nil:
			err = fmt.Errorf("%w: server %q: writing the sandbox's configuration: %w", ErrSetup, p.Spec.Name, werr)
		default:
			err = fmt.Errorf("%w: server %q: receiving the egress listeners: %w", ErrSetup, p.Spec.Name, lerr)
		}
		return abort(permanent(err))
	}
	lim.watch(cmd.Process.Pid)
	rel.serve(lns)
	return &launched{lim: lim, rel: rel}, nil
}

// startError explains a failed start of the child: the kernel refused the
// namespaces (ErrUnavailable), or another error (ErrSetup).
func startError(name string, err error) error {
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EUSERS) || errors.Is(err, syscall.EINVAL) {
		return permanent(fmt.Errorf("%w: server %q: the kernel refused the sandbox's namespaces (user, PID, mount, network, IPC, UTS): %w; "+
			"allow unprivileged user namespaces or set sandbox = %q", ErrUnavailable, name, err, ModeOff))
	}
	return fmt.Errorf("%w: server %q: starting the sandbox: %w", ErrSetup, name, err)
}

// SetupError is a step of the sandbox's set-up that failed in the child.
// errors.Is finds ErrSetup (or ErrUnavailable when the mount namespace
// itself was refused) and the errno.
type SetupError struct {
	Server string
	Stage  string // "mount /work", "pivot_root", "landlock", "exec /usr/bin/node", ...
	Errno  syscall.Errno
	Msg    string
	kind   error
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("%v: server %q: %s: %s", e.kind, e.Server, e.Stage, e.Msg)
}

func (e *SetupError) Unwrap() []error {
	if e.Errno == 0 {
		return []error{e.kind}
	}
	return []error{e.kind, e.Errno}
}

func parseStatus(name string, b []byte) error {
	parts := strings.SplitN(string(b), "\x00", 3)
	if len(parts) != 3 {
		return fmt.Errorf("%w: server %q: unreadable status from the sandbox: %q", ErrSetup, name, b)
	}
	n, _ := strconv.Atoi(parts[1])
	e := &SetupError{Server: name, Stage: parts[0], Errno: syscall.Errno(n), Msg: parts[2], kind: ErrSetup}
	if (e.Stage == "mount / private" || e.Stage == "mount /proc") && e.Errno == syscall.EPERM {
		// A mount namespace the kernel or an LSM does not let us use, or
		// a procfs it will not mount in a user namespace (a container
		// whose /proc has masked paths): starting again cannot help.
		e.kind = ErrUnavailable
		return permanent(e)
	}
	return e
}

// config is what the child does for one start of cmd.
func (p *Plan) config(cmd *exec.Cmd, rel *relay, as, nproc uint64) (*nsinit.Config, error) {
	prog, ok := p.guestPath(cmd.Path)
	if !ok {
		return nil, fmt.Errorf("%w: server %q: the program %s is not visible inside the sandbox; add its directory to allowed_paths", ErrSpec, p.Spec.Name, cmd.Path)
	}
	c := &nsinit.Config{Path: prog, Argv: cmd.Args, Dir: "/", LoopbackUp: true, Listen: rel.listen(), RlimitAS: as, RlimitNPROC: nproc,
		Seccomp: p.Mechanisms.Seccomp}
	if len(c.Argv) == 0 {
		c.Argv = []string{cmd.Path}
	}
	if cmd.Dir != "" {
		if d, ok := p.guestPath(cmd.Dir); ok {
			c.Dir = d
		}
	}
	c.Env = append(append([]string(nil), cmd.Env...), rel.env()...)
	if envValue(c.Env, "HOME") == "" && p.home != "" {
		c.Env = append(c.Env, "HOME="+p.home)
	}
	c.Env = append(c.Env, p.launcherEnv(c.Env)...)
	ll := &nsinit.Landlock{BestEffort: p.Spec.Mode == ModeBestEffort}
	files := map[string]string{}
	for g, content := range rel.files() {
		files[g] = content
	}
	for _, e := range p.entries {
		switch e.kind {
		case "file":
			content, ok := files[e.Guest]
			if !ok {
				content = e.content
			}
			delete(files, e.Guest)
			c.Files = append(c.Files, nsinit.File{Target: e.Guest, Content: content})
			ll.ReadOnly = append(ll.ReadOnly, e.Guest)
			continue
		case "dev":
			ll.ReadWrite = append(ll.ReadWrite, "/dev/shm")
			ll.ReadWrite = append(ll.ReadWrite, nsinit.DevNodes()...)
		case "overlay":
			// The host's files are the read-only lower layer; the guest
			// writes to the private upper one.
			ll.ReadWrite = append(ll.ReadWrite, e.Guest)
			c.Mounts = append(c.Mounts, nsinit.Mount{Kind: e.kind, Source: e.Host, Target: e.Guest, Size: e.size})
			continue
		case "proc", "bind", "tmpfs":
			if e.Mode == sandbox.MountReadWrite {
				ll.ReadWrite = append(ll.ReadWrite, e.Guest)
			} else {
				ll.ReadOnly = append(ll.ReadOnly, e.Guest)
			}
		}
		c.Mounts = append(c.Mounts, nsinit.Mount{Kind: e.kind, Source: e.Host, Target: e.Guest, ReadOnly: e.Mode == sandbox.MountReadOnly && e.kind != "dev", Size: e.size})
	}
	for g, content := range files {
		c.Files = append(c.Files, nsinit.File{Target: g, Content: content})
		ll.ReadOnly = append(ll.ReadOnly, g)
	}
	c.Landlock = ll
	return c, nil
}
