package transport

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/toolhost/toolhost/internal/procgroup"
)

// Pid returns the child's process ID (also its process group ID), or 0 when
// it is not running.
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

// start starts the child (s.mu held): its pipes, its process (on a
// goroutine locked to its thread, see containment.start, which then waits
// for it), and the reader of its stderr. With StdioOptions.Launcher, the
// launcher starts the process in place of the containment, and is told of
// its exit (Launched.Exited). Errors wrap ErrStart (and whatever the
// launcher's error wraps, ErrPermanent included); on error nothing is left
// running or open.
func (s *Stdio) start() error {
	path := s.cmd.Path
	if !strings.Contains(path, "/") {
		// Look the program up in toolhost's PATH, not the child's (which may
		// not have one).
		lp, err := exec.LookPath(path)
		if err != nil {
			return fmt.Errorf("%w: command %q not found in PATH", ErrStart, path)
		}
		path = lp
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStart, err)
	}
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	env := s.environ()
	newCmd := func() *exec.Cmd {
		cmd := exec.Command(path, s.cmd.Args...)
		cmd.Env = env
		cmd.Dir = s.cmd.Dir
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
		return cmd
	}
	// The child is started, and waited for, on one goroutine locked to its
	// thread (see containment.start).
	exited := make(chan struct{})
	started := make(chan *exec.Cmd, 1)
	var startErr error
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		var (
			cmd      *exec.Cmd
			launched Launched
			err      error
		)
		if s.opts.Launcher != nil {
			cmd = newCmd()
			launched, err = s.opts.Launcher.Launch(cmd)
		} else {
			cmd, _, err = s.contain.start(newCmd)
		}
		if err != nil {
			startErr = err
			close(started)
			return
		}
		started <- cmd
		werr := cmd.Wait()
		if launched != nil {
			// What the launcher knows of the exit (a sandbox limit that
			// killed the server), wrapped into the fault (see fault).
			s.exitCause = launched.Exited(werr)
		}
		s.exitErr = werr
		close(exited)
	}()
	cmd, ok := <-started
	// The child holds its own copies of these ends now.
	inR.Close()
	outW.Close()
	errW.Close()
	if !ok {
		inW.Close()
		outR.Close()
		errR.Close()
		return fmt.Errorf("%w: starting %q: %w", ErrStart, s.cmd.Path, startErr)
	}
	s.proc, s.pgid = cmd, cmd.Process.Pid
	s.stdin, s.stdout, s.stderr = inW, outR, errR
	s.exited = exited
	s.stderrEOF = make(chan struct{})
	s.done = make(chan struct{})
	s.bg.Add(1)
	go s.readStderr()
	return nil
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

// exitFault is the fault of a reaped child: ErrConnectionLost with the
// exit status and, when the launcher explained the exit (a sandbox limit),
// its error wrapped too, so errors.Is finds both.
func (s *Stdio) exitFault() error {
	if s.exitCause != nil {
		return fmt.Errorf("%w: server process %s: %w%s", ErrConnectionLost, exitText(s.exitErr), s.exitCause, s.stderrTail())
	}
	return fmt.Errorf("%w: server process %s%s", ErrConnectionLost, exitText(s.exitErr), s.stderrTail())
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
			if s.opts.Redact != nil {
				text = s.opts.Redact(text)
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
	if procgroup.Alive(s.pgid) {
		_ = syscall.Kill(-s.pgid, syscall.SIGTERM)
		deadline := time.Now().Add(grace)
		for procgroup.Alive(s.pgid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if procgroup.Alive(s.pgid) {
			_ = syscall.Kill(-s.pgid, syscall.SIGKILL)
		}
	}
	return escalated
}
