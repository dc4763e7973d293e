// Command hostileserver is an adversarial stdio MCP server (go-sdk): each
// of its tools tries one escape from a sandbox and reports what happened
// as text, so a test (sandbox/native/hostile_test.go) or a person can run
// it inside toolhost's native sandbox or another one (srt) and compare.
//
// Every result is one text content of the form "ok: DETAIL" (the attempt
// worked: for an escape, the sandbox failed) or "err: ERROR" (the attempt
// failed; ERROR is the system's error, e.g. "open /etc/shadow: no such
// file or directory"). A tool never crashes the server, except fork_bomb
// with threads and balloon, whose point is to reach a limit.
//
// Tools:
//
//	read_file(path)            read a file (up to 4 KiB)
//	write_file(path, text)     create or truncate a file and write text
//	list_dir(path)             the names in a directory
//	symlink(target, link)      create a symbolic link link -> target
//	hardlink(target, link)     create a hard link link to target
//	proc(pid)                  read /proc/1/environ, /proc/PID/environ and
//	                           /proc/PID/root/ (PID: e.g. toolhost's), and
//	                           count the processes /proc lists
//	connect(addr)              a TCP connection to host:port (3s timeout)
//	http_get(url)              an HTTP GET with net/http's default proxy
//	                           handling (HTTP_PROXY and friends; 10s)
//	proxy_connect(proxy, target)
//	                           send "CONNECT target" to the HTTP proxy at
//	                           proxy (host:port) by hand, as a client that
//	                           wants a host its proxy should refuse;
//	                           "ok: STATUS-LINE" when the proxy answers
//	abstract_unix(name)        connect to the abstract Unix socket @name
//	signal(pid, sig)           kill(2) pid with sig (default SIGTERM)
//	ptrace(pid)                PTRACE_ATTACH pid (detaches at once)
//	syscalls()                 mount, umount2, unshare, setns, chroot,
//	                           keyctl, bpf, init_module, finit_module,
//	                           open_by_handle_at: one line each, "NAME: ok"
//	                           or "NAME: err: ERRNO (message)"; each is
//	                           harmless where it works
//	fork_bomb(n, threads)      start n processes (a sleeping copy of this
//	                           program) or, with threads, n OS threads; stops
//	                           at the first failure and reports the count
//	balloon(mib)               allocate mib MiB and touch every page
//	env()                      the environment, one KEY=VALUE a line
//	whoami()                   uid, gid, pid, capabilities and NoNewPrivs
//	                           from /proc/self/status, and seccomp mode
//
// With -sleeper it only sleeps (fork_bomb's children).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

func text(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

func ok(detail string) *mcp.CallToolResult { return text("ok: %s", detail) }
func fail(err error) *mcp.CallToolResult   { return text("err: %v", err) }

type pathArgs struct {
	Path string `json:"path" jsonschema:"the path"`
}

type writeArgs struct {
	Path string `json:"path"`
	Text string `json:"text"`
}

type linkArgs struct {
	Target string `json:"target"`
	Link   string `json:"link"`
}

type addrArgs struct {
	Addr string `json:"addr" jsonschema:"host:port"`
}

type urlArgs struct {
	URL string `json:"url"`
}

type proxyArgs struct {
	Proxy  string `json:"proxy"`
	Target string `json:"target"`
}

type nameArgs struct {
	Name string `json:"name"`
}

type pidArgs struct {
	Pid int `json:"pid"`
	Sig int `json:"sig,omitempty"`
}

type bombArgs struct {
	N       int  `json:"n"`
	Threads bool `json:"threads,omitempty"`
}

type balloonArgs struct {
	MiB int `json:"mib"`
}

type none struct{}

func readFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	return string(b), err
}

// children are fork_bomb's processes, reaped by one goroutine each and
// killed when the server exits.
var (
	children   sync.WaitGroup
	childrenMu sync.Mutex
	childProcs []*os.Process
)

func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "hostileserver", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "read_file", Description: "Read a file (up to 4 KiB)."},
		func(_ context.Context, _ *mcp.CallToolRequest, a pathArgs) (*mcp.CallToolResult, any, error) {
			b, err := readFile(a.Path)
			if err != nil {
				return fail(err), nil, nil
			}
			return ok(b), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "write_file", Description: "Create or truncate a file and write text to it."},
		func(_ context.Context, _ *mcp.CallToolRequest, a writeArgs) (*mcp.CallToolResult, any, error) {
			if err := os.WriteFile(a.Path, []byte(a.Text), 0o644); err != nil {
				return fail(err), nil, nil
			}
			return ok("wrote " + a.Path), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "list_dir", Description: "List a directory."},
		func(_ context.Context, _ *mcp.CallToolRequest, a pathArgs) (*mcp.CallToolResult, any, error) {
			ents, err := os.ReadDir(a.Path)
			if err != nil {
				return fail(err), nil, nil
			}
			names := make([]string, len(ents))
			for i, e := range ents {
				names[i] = e.Name()
			}
			return ok(strings.Join(names, " ")), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "symlink", Description: "Create a symbolic link link -> target."},
		func(_ context.Context, _ *mcp.CallToolRequest, a linkArgs) (*mcp.CallToolResult, any, error) {
			if err := os.Symlink(a.Target, a.Link); err != nil {
				return fail(err), nil, nil
			}
			return ok(a.Link + " -> " + a.Target), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hardlink", Description: "Create a hard link link to target."},
		func(_ context.Context, _ *mcp.CallToolRequest, a linkArgs) (*mcp.CallToolResult, any, error) {
			if err := os.Link(a.Target, a.Link); err != nil {
				return fail(err), nil, nil
			}
			return ok(a.Link + " = " + a.Target), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "proc", Description: "Look at other processes through /proc."},
		func(_ context.Context, _ *mcp.CallToolRequest, a pidArgs) (*mcp.CallToolResult, any, error) {
			var lines []string
			report := func(what string, err error, detail string) {
				if err != nil {
					lines = append(lines, fmt.Sprintf("%s: err: %v", what, err))
				} else {
					lines = append(lines, fmt.Sprintf("%s: ok: %s", what, detail))
				}
			}
			env, err := readFile("/proc/1/environ")
			report("/proc/1/environ", err, strconv.Itoa(len(env))+" bytes")
			if a.Pid > 0 {
				p := "/proc/" + strconv.Itoa(a.Pid)
				env, err = readFile(p + "/environ")
				report(p+"/environ", err, strings.ReplaceAll(env, "\x00", " "))
				ents, err := os.ReadDir(p + "/root/")
				report(p+"/root/", err, fmt.Sprint(len(ents), " entries"))
			}
			ents, err := os.ReadDir("/proc")
			var pids []string
			for _, e := range ents {
				if _, err := strconv.Atoi(e.Name()); err == nil {
					pids = append(pids, e.Name())
				}
			}
			report("pids", err, fmt.Sprintf("%d [%s]", len(pids), strings.Join(pids, " ")))
			return text("%s", strings.Join(lines, "\n")), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "connect", Description: "Open a TCP connection to host:port."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a addrArgs) (*mcp.CallToolResult, any, error) {
			d := net.Dialer{Timeout: 3 * time.Second}
			c, err := d.DialContext(ctx, "tcp", a.Addr)
			if err != nil {
				return fail(err), nil, nil
			}
			defer c.Close()
			return ok("connected " + c.LocalAddr().String() + " -> " + c.RemoteAddr().String()), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "http_get", Description: "GET a URL with net/http (honours HTTP_PROXY and friends)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a urlArgs) (*mcp.CallToolResult, any, error) {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL, nil)
			if err != nil {
				return fail(err), nil, nil
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fail(err), nil, nil
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
			if err != nil {
				return fail(err), nil, nil
			}
			return ok(fmt.Sprintf("%d %s", resp.StatusCode, b)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "proxy_connect", Description: "Send CONNECT target to an HTTP proxy by hand."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a proxyArgs) (*mcp.CallToolResult, any, error) {
			d := net.Dialer{Timeout: 3 * time.Second}
			c, err := d.DialContext(ctx, "tcp", a.Proxy)
			if err != nil {
				return fail(err), nil, nil
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", a.Target, a.Target); err != nil {
				return fail(err), nil, nil
			}
			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil {
				return fail(fmt.Errorf("reading the proxy's answer: %w", err)), nil, nil
			}
			return ok(strings.TrimSpace(line)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "abstract_unix", Description: "Connect to the abstract Unix socket @name."},
		func(_ context.Context, _ *mcp.CallToolRequest, a nameArgs) (*mcp.CallToolResult, any, error) {
			c, err := net.DialTimeout("unix", "@"+a.Name, 3*time.Second)
			if err != nil {
				return fail(err), nil, nil
			}
			c.Close()
			return ok("connected to @" + a.Name), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "signal", Description: "Send a signal (default SIGTERM) to a process."},
		func(_ context.Context, _ *mcp.CallToolRequest, a pidArgs) (*mcp.CallToolResult, any, error) {
			sig := syscall.Signal(a.Sig)
			if a.Sig == 0 {
				sig = syscall.SIGTERM
			}
			if err := syscall.Kill(a.Pid, sig); err != nil {
				return fail(fmt.Errorf("kill %d %v: %w", a.Pid, sig, err)), nil, nil
			}
			return ok(fmt.Sprintf("sent %v to %d", sig, a.Pid)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ptrace", Description: "PTRACE_ATTACH to a process (and detach)."},
		func(_ context.Context, _ *mcp.CallToolRequest, a pidArgs) (*mcp.CallToolResult, any, error) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := syscall.PtraceAttach(a.Pid); err != nil {
				return fail(fmt.Errorf("ptrace attach %d: %w", a.Pid, err)), nil, nil
			}
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(a.Pid, &ws, syscall.WALL, nil)
			_ = syscall.PtraceDetach(a.Pid)
			return ok(fmt.Sprintf("attached to %d", a.Pid)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "syscalls", Description: "Try system calls no MCP server needs; report each errno."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			return text("%s", strings.Join(trySyscalls(), "\n")), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fork_bomb", Description: "Start n processes (or n OS threads) until one fails."},
		func(_ context.Context, _ *mcp.CallToolRequest, a bombArgs) (*mcp.CallToolResult, any, error) {
			if a.Threads {
				return forkThreads(a.N), nil, nil
			}
			self, err := os.Executable()
			if err != nil {
				return fail(err), nil, nil
			}
			for i := 0; i < a.N; i++ {
				cmd := exec.Command(self, "-sleeper")
				if err := cmd.Start(); err != nil {
					return fail(fmt.Errorf("started %d processes, then: %w", i, err)), nil, nil
				}
				childrenMu.Lock()
				childProcs = append(childProcs, cmd.Process)
				childrenMu.Unlock()
				children.Add(1)
				go func() { defer children.Done(); _ = cmd.Wait() }()
			}
			return ok(fmt.Sprintf("started %d processes", a.N)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "balloon", Description: "Allocate mib MiB and touch every page."},
		func(_ context.Context, _ *mcp.CallToolRequest, a balloonArgs) (*mcp.CallToolResult, any, error) {
			var keep [][]byte
			for i := 0; i < a.MiB; i++ {
				b := make([]byte, 1<<20)
				for j := 0; j < len(b); j += 4096 {
					b[j] = 1
				}
				keep = append(keep, b)
			}
			runtime.KeepAlive(keep)
			return ok(fmt.Sprintf("allocated %d MiB", a.MiB)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "The environment, one KEY=VALUE a line."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			env := os.Environ()
			sort.Strings(env)
			return ok(strings.Join(env, "\n")), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "uid, gid, pid, capabilities, NoNewPrivs and seccomp mode."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			st, err := readFile("/proc/self/status")
			if err != nil {
				return fail(err), nil, nil
			}
			lines := []string{fmt.Sprintf("uid=%d gid=%d pid=%d", os.Getuid(), os.Getgid(), os.Getpid())}
			for _, l := range strings.Split(st, "\n") {
				if strings.HasPrefix(l, "Cap") || strings.HasPrefix(l, "NoNewPrivs") || strings.HasPrefix(l, "Seccomp:") {
					lines = append(lines, l)
				}
			}
			return ok(strings.Join(lines, "\n")), nil, nil
		})
	return s
}

// forkThreads starts n OS threads, each locked and blocked; the Go runtime
// aborts the process when the kernel refuses a thread (that is the point).
func forkThreads(n int) *mcp.CallToolResult {
	var started sync.WaitGroup
	for i := 0; i < n; i++ {
		started.Add(1)
		go func() {
			runtime.LockOSThread()
			started.Done()
			select {}
		}()
	}
	started.Wait()
	return ok(fmt.Sprintf("started %d threads", n))
}

// trySyscalls tries each system call a server has no business making and
// reports "name: ok" or "name: err: ERRNO-NAME (message)".
func trySyscalls() []string {
	// Locked and never unlocked: the thread is discarded when the call
	// ends, with whatever an unshare that worked did to it.
	runtime.LockOSThread()
	var out []string
	rep := func(name string, err error) {
		var errno syscall.Errno
		switch {
		case err == nil:
			out = append(out, name+": ok")
		case errors.As(err, &errno):
			out = append(out, fmt.Sprintf("%s: err: %s (%v)", name, unix.ErrnoName(errno), err))
		default:
			out = append(out, fmt.Sprintf("%s: err: %v", name, err))
		}
	}
	// Each attempt is harmless where it works (run unsandboxed as root,
	// as under a weaker sandbox): a tmpfs on a fresh directory, undone; an
	// unmount of a directory that is not a mount point (EINVAL where
	// allowed); chroot to "/"; setns into the namespace the process is in.
	dir, err := os.MkdirTemp("", "hostile-")
	if err != nil {
		dir = "/nonexistent-hostile"
	}
	err = unix.Mount("none", dir, "tmpfs", 0, "size=1m")
	rep("mount", err)
	if err == nil {
		_ = unix.Unmount(dir, unix.MNT_DETACH)
	}
	rep("umount2", unix.Unmount(dir, 0))
	rep("unshare(CLONE_NEWNS)", unix.Unshare(unix.CLONE_NEWNS))
	rep("unshare(CLONE_NEWUSER)", unix.Unshare(unix.CLONE_NEWUSER))
	if fd, err := unix.Open("/proc/self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		rep("setns", err)
	} else {
		rep("setns", unix.Setns(fd, unix.CLONE_NEWNET))
		unix.Close(fd)
	}
	rep("chroot", unix.Chroot("/"))
	_, err = unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 1, 0, 0)
	rep("keyctl", err)
	var attr [128]byte
	_, _, e := unix.Syscall(unix.SYS_BPF, 0 /* BPF_MAP_CREATE */, uintptr(unsafe.Pointer(&attr[0])), uintptr(len(attr)))
	rep("bpf", errnoErr(e))
	_, _, e = unix.Syscall(unix.SYS_INIT_MODULE, 0, 0, 0)
	rep("init_module", errnoErr(e))
	_, _, e = unix.Syscall(unix.SYS_FINIT_MODULE, ^uintptr(0), 0, 0)
	rep("finit_module", errnoErr(e))
	// open_by_handle_at (the "shocker" container escape): a bogus handle
	// on "/" is EPERM without CAP_DAC_READ_SEARCH, else a handle error.
	var handle [16]byte // struct file_handle: handle_bytes 8, handle_type 0, 8 bytes
	handle[0] = 8
	if fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		r, _, e := unix.Syscall(unix.SYS_OPEN_BY_HANDLE_AT, uintptr(fd), uintptr(unsafe.Pointer(&handle[0])), unix.O_RDONLY)
		if e == 0 {
			unix.Close(int(r))
		}
		rep("open_by_handle_at", errnoErr(e))
		unix.Close(fd)
	}
	_ = os.Remove(dir)
	return out
}

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func main() {
	sleeper := flag.Bool("sleeper", false, "only sleep (fork_bomb's children)")
	flag.Parse()
	if *sleeper {
		time.Sleep(time.Hour)
		return
	}
	log.SetFlags(0)
	log.SetPrefix("hostileserver: ")
	log.Printf("starting as pid %d in %s", os.Getpid(), mustWd())
	if err := newServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
	}
	childrenMu.Lock()
	for _, p := range childProcs {
		_ = p.Kill()
	}
	childrenMu.Unlock()
	children.Wait()
}

func mustWd() string {
	wd, err := os.Getwd()
	if err != nil {
		return "?"
	}
	return filepath.Clean(wd)
}
