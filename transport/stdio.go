package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

	// Redact, when set, is applied to each line of the child's stderr
	// before it is logged and kept for the transport's errors (the last
	// lines, quoted when the server dies: "last stderr: ..."), so that a
	// secret the server echoes (from its env) reaches neither a log nor an
	// error a client sees. The host sets it to replace the configuration's
	// secrets. Default: none.
	Redact func(string) string

	// TerminateGrace is how long Close waits at each step of the shutdown
	// escalation (close stdin, then SIGTERM, then SIGKILL, each sent to the
	// whole process group). Default 2s.
	TerminateGrace time.Duration

	// MaxLineLength bounds one JSON-RPC message read from the child's
	// stdout, in bytes; the host sets it from the server's max_output (plus
	// ResponseEnvelope). A longer line is read to its end and discarded as
	// it streams, never buffered whole: when it is a response, the request
	// it answers fails with ErrOutputTooLarge and the connection stays up;
	// anything else is logged and dropped. Default 16 MiB (the go-sdk's
	// mcp.DefaultMaxLineLength).
	MaxLineLength int

	// StrictStdout makes any stdout line that is not JSON a protocol
	// violation, as the spec says (the server MUST NOT write anything else
	// there): the connection is closed and calls fail with ErrProtocol.
	// Default false: such a line (a start-up banner, say) is skipped and
	// logged at Warn, quoted (the first 10, then one in every 1000), and
	// counted (see SkippedLines), as popular MCP clients do.
	StrictStdout bool

	// OnListChanged, when set, is called (on the connection's reader
	// goroutine: it must not block) for each list_changed notification
	// from the server.
	OnListChanged func(ListKind)

	// Features configures the client features offered to the server (log
	// level, elicitation, sampling, roots). Nil: none.
	Features *ClientOptions

	// Launcher, when set, starts the server's process in place of the
	// default containment (a native sandbox, say; see Launcher). Nil: the
	// default (Containment).
	Launcher Launcher
}

const (
	// faultWait bounds how long a failed operation waits for the last
	// stderr lines that explain it (a grandchild may hold stderr open), or
	// for a closing owner's session to end. Short, so a caller learns of a
	// crash promptly.
	faultWait = 50 * time.Millisecond
	// exitWait bounds how long a failed operation waits, after stdout
	// reached EOF, for the exit status: a crashed child's usually comes in
	// microseconds, but on a busy machine the reaping goroutine may run
	// well after the EOF is read (50ms was not always enough), and the
	// status is what the caller needs. A child that closed stdout but keeps
	// running is reported after it.
	exitWait = 500 * time.Millisecond

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
// always reaped. On Linux the child is also the first process of a PID
// namespace of its own, with a /proc of that namespace, and dies with
// toolhost (see Containment), so no descendant outlives Close, or toolhost
// killed by SIGKILL.
type Stdio struct {
	ops
	cmd     Command
	opts    StdioOptions
	logger  hclog.Logger
	contain *containment // the levels tried and kept; &contained but in tests
	sizes   sizeTable    // the tools/call results awaited by CallToolSized
	fast    *fastCalls   // the tools/call hot path (stdio_fast.go)

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
	exitCause  error         // Launched.Exited's explanation of the exit, valid after exited is closed
	done       chan struct{} // closed when the session has ended (see Done)
	endedAlone bool          // the session ended before Close was called
	bg         sync.WaitGroup
	closeOnce  sync.Once
	closeErr   error

	tailMu   sync.Mutex
	tail     []string // last lines of stderr, for error messages
	protoErr error    // the first protocol violation seen on stdout
	skipped  int      // stdout lines skipped (not JSON, or over MaxLineLength)
}

// ResponseEnvelope is what a JSON-RPC response line may add to the JSON
// encoding of its result (the jsonrpc and id members, the newline), in
// bytes: the host allows it on top of max_output when it sets
// StdioOptions.MaxLineLength.
const ResponseEnvelope = 64 << 10

// SkippedLines returns how many lines of the child's stdout were skipped:
// lines that are not JSON (unless StrictStdout) and lines over
// MaxLineLength.
func (s *Stdio) SkippedLines() int {
	s.tailMu.Lock()
	defer s.tailMu.Unlock()
	return s.skipped
}

var _ Transport = (*Stdio)(nil)

// NewStdio returns an unconnected Transport for cmd. Nothing is started until
// Connect.
func NewStdio(cmd Command, opts *StdioOptions) *Stdio {
	s := &Stdio{cmd: cmd, contain: &contained}
	s.ops = ops{do: s.do, progress: &progressRouter{tapped: true}, calls: &callSet{tapped: true}}
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

	if err := s.start(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	// The go-sdk and fastCalls share stdin under one lock (stdio_fast.go).
	fast := &fastCalls{w: &lockedWriter{w: s.stdin}}
	s.fast = fast
	s.mu.Unlock()
	s.logger.Debug("started", "pid", s.pgid, "command", s.cmd.Path)

	conn := &mcp.IOTransport{
		Reader:        &lineFilter{s: s, r: bufio.NewReaderSize(s.stdout, 64*1024), max: s.opts.MaxLineLength, strict: s.opts.StrictStdout},
		Writer:        fast.w,
		MaxLineLength: -1, // lineFilter enforces the limit with a clearer error
	}
	// taskTransport runs the calls of tools that are tasks (tasks.go);
	// sizedTransport, above it, measures results (stdio_size.go).
	tasks := &taskTransport{inner: conn, logger: s.logger}
	tr := &sizedTransport{inner: tasks, sizes: &s.sizes, meta: &fast.meta}
	cs, err := newClient(s.logger, s.opts.OnListChanged, s.progress, s.opts.Features, s.calls).Connect(ctx, tr, sessionOptions(s.opts.Features))
	if err != nil {
		cause := capErr(s.fault(ctx, err))
		s.Close()
		return nil, fmt.Errorf("%w: %w", ErrInitialize, cause)
	}
	sess := newSession(cs)
	sess.fast = s.fastSession(sess, tasks.conn)
	if s.opts.Features != nil {
		sess.setLogLevel(ctx, s.logger, s.opts.Features.LogLevel)
	}
	s.mu.Lock()
	s.sess = sess
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
			return s.exitFault()
		case <-time.After(exitWait):
			return fmt.Errorf("%w: server closed its stdout%s", ErrConnectionLost, s.stderrTail())
		}
	}
	return err
}

func isClosedErr(err error) bool {
	return err != nil && (errors.Is(err, os.ErrClosed) || strings.Contains(err.Error(), "connection closed"))
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
		var werr *jsonrpc.Error
		if errors.As(err, &werr) && werr.Code == codeOutputTooLarge && strings.HasPrefix(werr.Message, tooLargePrefix) {
			return fmt.Errorf("%s: %w: %s; raise max_output or ask for less", op, ErrOutputTooLarge, strings.TrimPrefix(werr.Message, "toolhost: "))
		}
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
		sess, proc, fast := s.sess, s.proc, s.fast
		s.mu.Unlock()
		if proc == nil {
			return
		}
		if sess != nil {
			// The calls in flight end first, as the go-sdk's own do in
			// cs.Close (stdio_fast.go).
			fast.drain()
			// Closes the connection: stdin (the spec's first step) and our
			// read end of stdout.
			sess.cs.Close()
		}
		s.stdin.Close()
		s.stdout.Close()
		fast.stop(ErrClosed) // calls made by fastCalls end with the connection
		s.closeErr = s.terminate()
		// Every process of the group is gone: stderr reaches EOF. Closing it
		// also unblocks the reader if a stray process kept it open.
		s.stderr.Close()
		s.bg.Wait()
	})
	return s.closeErr
}
