package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Command describes the child process of a stdio MCP server.
type Command struct {
	// Path is the program; without a slash it is looked up in the PATH of
	// toolhost's own environment.
	Path string
	// Args are its arguments (without the program name).
	Args []string
	// Env is added to the child's environment (after InheritEnv).
	Env map[string]string
	// InheritEnv names the variables copied from toolhost's environment.
	// Nil or empty inherits nothing: the caller (normally the host, from
	// config.DefaultInheritEnv) decides the default.
	InheritEnv []string
	// Dir is the working directory; empty means toolhost's.
	Dir string
}

// StdioOptions configures a Stdio transport. The zero value and nil are valid.
type StdioOptions struct {
	// Logger receives the child's stderr, one record per line (at Info), and
	// the transport's own diagnostics. Default: a null logger.
	Logger hclog.Logger

	// TerminateGrace is how long Close waits at each step of the shutdown
	// escalation (close stdin, then SIGTERM, then SIGKILL, each sent to the
	// whole process group). Default 2s.
	TerminateGrace time.Duration

	// MaxLineLength bounds one JSON-RPC message read from the child's stdout,
	// in bytes. A longer line is a protocol violation. Default 16 MiB (the
	// go-sdk's mcp.DefaultMaxLineLength).
	MaxLineLength int

	// OnListChanged, when set, is called (on the connection's reader
	// goroutine: it must not block) for each list_changed notification
	// from the server.
	OnListChanged func(ListKind)
}

const (
	// faultWait bounds how long a failed operation waits, after stdout
	// reached EOF, for the exit status and the last stderr lines that
	// explain it; a child that closed stdout but keeps running is reported
	// after it. Short, so a caller learns of a crash promptly.
	faultWait = 50 * time.Millisecond

	defaultTerminateGrace = 2 * time.Second
	stderrTailLines       = 8
	maxStderrLine         = 4096
)

// Stdio is a Transport to an MCP server run as a child process that speaks
// newline-delimited JSON-RPC on its stdin and stdout (MCP 2025-11-25,
// basic/transports, "stdio").
//
// The child runs in its own process group with only the environment in its
// Command. Its stderr is logged line by line and never treated as an error.
// Anything on its stdout that is not a JSON-RPC message is a protocol
// violation (the spec says the server MUST NOT write anything else there): the
// connection is closed and calls fail with ErrProtocol, naming the line.
//
// Close shuts the child down as the spec's stdio shutdown section describes,
// but for the whole process group: close stdin and wait, SIGTERM and wait,
// SIGKILL; so launchers such as npx leave no orphaned children. The child is
// always reaped.
type Stdio struct {
	ops
	cmd    Command
	opts   StdioOptions
	logger hclog.Logger

	mu         sync.Mutex
	closed     bool
	connected  bool
	proc       *exec.Cmd
	pgid       int
	stdin      io.WriteCloser
	stdout     io.ReadCloser
	stderr     io.ReadCloser
	sess       *session
	exited     chan struct{} // closed when the process has been reaped
	stderrEOF  chan struct{} // closed when stderr has been read to its end
	exitErr    error         // the result of Wait, valid after exited is closed
	done       chan struct{} // closed when the session has ended (see Done)
	endedAlone bool          // the session ended before Close was called
	bg         sync.WaitGroup
	closeOnce  sync.Once
	closeErr   error

	tailMu   sync.Mutex
	tail     []string // last lines of stderr, for error messages
	protoErr error    // the first protocol violation seen on stdout
}

var _ Transport = (*Stdio)(nil)

// NewStdio returns an unconnected Transport for cmd. Nothing is started until
// Connect.
func NewStdio(cmd Command, opts *StdioOptions) *Stdio {
	s := &Stdio{cmd: cmd}
	s.ops = ops{do: s.do}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.TerminateGrace <= 0 {
		s.opts.TerminateGrace = defaultTerminateGrace
	}
	if s.opts.MaxLineLength <= 0 {
		s.opts.MaxLineLength = mcp.DefaultMaxLineLength
	}
	s.logger = s.opts.Logger
	if s.logger == nil {
		s.logger = hclog.NewNullLogger()
	}
	return s
}

// Pid returns the child's process ID (also its process group ID), or 0 when
// it is not running.
// Done implements Watcher: the channel is closed when the server's session
// has ended (its process exited or closed its stdout, it broke the protocol,
// or Close was called). Nil before Connect.
func (s *Stdio) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.connected {
		return nil
	}
	return s.done
}

// Lost implements Watcher: why the session ended (the exit status and the
// last stderr lines, a closed stdout, or the protocol violation).
func (s *Stdio) Lost() error {
	return s.fault(context.Background(), mcp.ErrConnectionClosed)
}

func (s *Stdio) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.proc.Process == nil {
		return 0
	}
	select {
	case <-s.exited:
		return 0
	default:
		return s.proc.Process.Pid
	}
}

func (s *Stdio) environ() []string {
	var env []string
	for _, k := range s.cmd.InheritEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range s.cmd.Env {
		env = append(env, k+"="+v)
	}
	return env
}

// Connect starts the child and performs the initialize handshake. Errors:
// ErrStart when the program cannot be started; ErrInitialize (joined with
// ErrTimeout, ErrProtocol or the exit status) when the handshake fails; in
// both cases the child has been stopped and reaped.
func (s *Stdio) Connect(ctx context.Context) (*mcp.InitializeResult, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if s.proc != nil {
		s.mu.Unlock()
		return nil, errors.New("stdio transport: Connect called twice")
	}

	path := s.cmd.Path
	if !strings.Contains(path, "/") {
		// Look the program up in toolhost's PATH, not the child's (which may
		// not have one).
		lp, err := exec.LookPath(path)
		if err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: command %q not found in PATH", ErrStart, path)
		}
		path = lp
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	cmd := exec.Command(path, s.cmd.Args...)
	cmd.Env = s.environ()
	cmd.Dir = s.cmd.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	startErr := cmd.Start()
	// The child holds its own copies of these ends now.
	inR.Close()
	outW.Close()
	errW.Close()
	if startErr != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: starting %q: %v", ErrStart, s.cmd.Path, startErr)
	}
	s.proc, s.pgid = cmd, cmd.Process.Pid
	s.stdin, s.stdout, s.stderr = inW, outR, errR
	s.exited = make(chan struct{})
	s.stderrEOF = make(chan struct{})
	s.done = make(chan struct{})
	s.bg.Add(2)
	go s.readStderr()
	go func() {
		defer s.bg.Done()
		s.exitErr = cmd.Wait()
		close(s.exited)
	}()
	s.mu.Unlock()
	s.logger.Debug("started", "pid", cmd.Process.Pid, "command", s.cmd.Path)

	conn := &mcp.IOTransport{
		Reader:        &lineFilter{s: s, r: bufio.NewReaderSize(outR, 64*1024), max: s.opts.MaxLineLength},
		Writer:        inW,
		MaxLineLength: -1, // lineFilter enforces the limit with a clearer error
	}
	cs, err := newClient(s.logger, s.opts.OnListChanged).Connect(ctx, conn, nil)
	if err != nil {
		cause := capErr(s.fault(ctx, err))
		s.Close()
		return nil, fmt.Errorf("%w: %w", ErrInitialize, cause)
	}
	s.mu.Lock()
	s.sess = newSession(cs)
	s.connected = true
	closed := s.closed
	if !closed {
		done := s.done
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			// Wait returns when the connection ends: stdout reached EOF
			// (the process exited or closed it), a protocol violation
			// closed it, or Close.
			_ = cs.Wait()
			close(done)
		}()
	}
	s.mu.Unlock()
	if closed {
		// Close ran during the handshake and could not see the session.
		cs.Close()
		return nil, ErrClosed
	}
	return s.sess.init, nil
}

// fault explains why an operation on the child failed: the caller's context,
// a protocol violation on stdout, the child's exit, or err itself.
func (s *Stdio) fault(ctx context.Context, err error) error {
	if cerr := ctxError(ctx, "stdio"); cerr != nil {
		return cerr
	}
	if perr := s.protocolError(); perr != nil {
		return perr
	}
	s.mu.Lock()
	closed, exited, done := s.closed, s.exited, s.done
	s.mu.Unlock()
	if closed {
		// Closed by its owner, perhaps because the session had already
		// ended on its own (the host closes a lost backend): then explain
		// that.
		if done == nil {
			return ErrClosed
		}
		select {
		case <-done:
		case <-time.After(faultWait):
		}
		s.mu.Lock()
		alone := s.endedAlone
		s.mu.Unlock()
		if !alone {
			return ErrClosed
		}
	}
	if errors.Is(err, syscall.EPIPE) {
		// The child's stdin is gone: the request was not delivered.
		return fmt.Errorf("%w: %w: the server's stdin is closed (%v)", ErrConnectionLost, ErrNotSent, err)
	}
	if exited != nil && (errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || isClosedErr(err)) {
		// stdout reached EOF; the exit status follows shortly.
		select {
		case <-exited:
			// Let the last stderr lines in (a grandchild may hold stderr
			// open: do not wait long).
			select {
			case <-s.stderrEOF:
			case <-time.After(faultWait):
			}
			return fmt.Errorf("%w: server process %s%s", ErrConnectionLost, exitText(s.exitErr), s.stderrTail())
		case <-time.After(faultWait):
			return fmt.Errorf("%w: server closed its stdout%s", ErrConnectionLost, s.stderrTail())
		}
	}
	return err
}

func isClosedErr(err error) bool {
	return err != nil && (errors.Is(err, os.ErrClosed) || strings.Contains(err.Error(), "connection closed"))
}

func exitText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "was killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	if err != nil {
		return "exited: " + err.Error()
	}
	return "exited with status 0"
}

func (s *Stdio) stderrTail() string {
	s.tailMu.Lock()
	defer s.tailMu.Unlock()
	if len(s.tail) == 0 {
		return ""
	}
	return "; last stderr: " + strings.Join(s.tail, " | ")
}

func (s *Stdio) protocolError() error {
	s.tailMu.Lock()
	defer s.tailMu.Unlock()
	return s.protoErr
}

func (s *Stdio) readStderr() {
	defer s.bg.Done()
	defer close(s.stderrEOF)
	r := bufio.NewReaderSize(s.stderr, maxStderrLine)
	for {
		line, isPrefix, err := r.ReadLine()
		if len(line) > 0 {
			text := string(line)
			if isPrefix {
				text += "…"
				// Skip the rest of an overlong line.
				for isPrefix && err == nil {
					_, isPrefix, err = r.ReadLine()
				}
			}
			s.logger.Info("stderr", "line", text)
			s.tailMu.Lock()
			if len(text) > 200 {
				text = text[:200] + "…"
			}
			s.tail = append(s.tail, text)
			if len(s.tail) > stderrTailLines {
				s.tail = s.tail[1:]
			}
			s.tailMu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// lineFilter passes the child's stdout through to the go-sdk's decoder one
// line at a time, checking each line is a JSON value first, so a violation
// is reported with the offending text instead of a decoder error.
type lineFilter struct {
	s   *Stdio
	r   *bufio.Reader
	max int
	buf []byte // the rest of the current line, with its newline
	n   int    // lines read
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.buf) == 0 {
		line, err := f.readLine()
		if err != nil {
			// Noted before anyone learns of it: did the session end on
			// its own (EOF: the child exited or closed stdout), or because
			// Close closed our end?
			f.s.mu.Lock()
			if !f.s.closed {
				f.s.endedAlone = true
			}
			f.s.mu.Unlock()
			return 0, err
		}
		f.n++
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			continue
		}
		if !json.Valid(trimmed) {
			return 0, f.violation(fmt.Sprintf("stdout line %d is not a JSON-RPC message: %q", f.n, clip(trimmed, 120)))
		}
		f.buf = append(trimmed, '\n')
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

func (f *lineFilter) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := f.r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > f.max {
			return nil, f.violation(fmt.Sprintf("stdout line %d is longer than %d bytes", f.n+1, f.max))
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if len(line) > 0 && err == io.EOF {
				return line, nil
			}
			return nil, err
		}
		return line, nil
	}
}

func (f *lineFilter) violation(msg string) error {
	f.s.tailMu.Lock()
	if f.s.protoErr == nil {
		f.s.protoErr = fmt.Errorf("%w: %s", ErrProtocol, msg)
	}
	err := f.s.protoErr
	f.s.tailMu.Unlock()
	f.s.logger.Error("protocol violation", "error", msg)
	return err
}

func (f *lineFilter) Close() error { return f.s.stdout.Close() }

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func (s *Stdio) current() (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, ErrClosed
	case !s.connected:
		return nil, ErrNotConnected
	}
	return s.sess, nil
}

func (s *Stdio) do(ctx context.Context, op string, f func(*session) error) error {
	sess, err := s.current()
	if err != nil {
		return fmt.Errorf("%s: %w (%w)", op, err, ErrNotSent)
	}
	if err := f(sess); err != nil {
		return fmt.Errorf("%s: %w", op, s.fault(ctx, err))
	}
	return nil
}

// Close stops the child as described on Stdio and waits until it and every
// goroutine of the transport are gone. It returns nil for a child that exited
// on its own after stdin was closed, and an error describing the escalation
// otherwise. Idempotent.
func (s *Stdio) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		sess, proc := s.sess, s.proc
		s.mu.Unlock()
		if proc == nil {
			return
		}
		if sess != nil {
			// Closes the connection: stdin (the spec's first step) and our
			// read end of stdout.
			sess.cs.Close()
		}
		s.stdin.Close()
		s.stdout.Close()
		s.closeErr = s.terminate()
		// Every process of the group is gone: stderr reaches EOF. Closing it
		// also unblocks the reader if a stray process kept it open.
		s.stderr.Close()
		s.bg.Wait()
	})
	return s.closeErr
}

// terminate waits for the group leader to exit after stdin was closed,
// escalating to SIGTERM and SIGKILL to the whole process group, and then
// makes sure no other member of the group survives the leader.
func (s *Stdio) terminate() error {
	grace := s.opts.TerminateGrace
	var escalated error
	wait := func(d time.Duration) bool {
		select {
		case <-s.exited:
			return true
		case <-time.After(d):
			return false
		}
	}
	if !wait(grace) {
		s.logger.Warn("server did not exit after stdin closed; sending SIGTERM", "pgid", s.pgid)
		_ = syscall.Kill(-s.pgid, syscall.SIGTERM)
		escalated = errors.New("server needed SIGTERM to exit")
		if !wait(grace) {
			s.logger.Warn("server did not exit after SIGTERM; sending SIGKILL", "pgid", s.pgid)
			_ = syscall.Kill(-s.pgid, syscall.SIGKILL)
			escalated = errors.New("server needed SIGKILL to exit")
			<-s.exited
		}
	}
	// The leader is gone; other members of its group (an npx launcher's node
	// child, say) may not be.
	if groupAlive(s.pgid) {
		_ = syscall.Kill(-s.pgid, syscall.SIGTERM)
		deadline := time.Now().Add(grace)
		for groupAlive(s.pgid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if groupAlive(s.pgid) {
			_ = syscall.Kill(-s.pgid, syscall.SIGKILL)
		}
	}
	return escalated
}

// groupAlive reports whether any live (not zombie) process is left in process
// group pgid. Zombies count as gone: they hold no resources and are reaped by
// their parent (or init), which toolhost cannot do for orphans.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	return len(GroupMembers(pgid)) > 0
}

// GroupMembers lists the live (not zombie) processes in process group pgid,
// read from /proc. Where /proc is not available it reports pgid itself while
// the group can be signalled. Tests use it to check that nothing outlives a
// Transport.
func GroupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		if syscall.Kill(-pgid, 0) == nil {
			return []int{pgid}
		}
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the parenthesised command: state ppid pgrp ...
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}
