//go:build linux

package transport_test

import (
	"context"
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
)

// errFakeLimit is what fakeLauncher's Exited explains an exit with.
var errFakeLimit = errors.New("fake sandbox limit exceeded")

// fakeLauncher starts the command plainly (its own process group) and
// records what the transport tells it.
type fakeLauncher struct {
	startErr error // returned by Launch instead of starting
	mu       sync.Mutex
	launches int
	exits    []error // the wait errors Exited was called with
}

type fakeLaunched struct{ l *fakeLauncher }

func (l *fakeLauncher) Launch(cmd *exec.Cmd) (transport.Launched, error) {
	l.mu.Lock()
	l.launches++
	l.mu.Unlock()
	if l.startErr != nil {
		return nil, l.startErr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(cmd.Env, "FAKE_LAUNCHER=1")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return fakeLaunched{l}, nil
}

func (f fakeLaunched) Exited(waitErr error) error {
	f.l.mu.Lock()
	defer f.l.mu.Unlock()
	f.l.exits = append(f.l.exits, waitErr)
	if waitErr != nil {
		return errFakeLimit
	}
	return nil
}

func launcherStdio(t *testing.T, l transport.Launcher, args ...string) *transport.Stdio {
	return transport.NewStdio(transport.Command{Path: testutil.Fixture(t), Args: args, InheritEnv: config.DefaultInheritEnv},
		&transport.StdioOptions{Logger: hclog.New(&hclog.LoggerOptions{Name: t.Name(), Output: testWriter{t}, Level: hclog.Debug}),
			TerminateGrace: 500 * time.Millisecond, Launcher: l})
}

// TestStdioLauncherExitCause: with a Launcher, the transport starts the
// server through it, calls Exited once after the reaping with the wait
// error, and wraps Exited's error into the ErrConnectionLost a call
// reports (Lost, and a failed call), so errors.Is finds the launcher's reason (a sandbox limit).
func TestStdioLauncherExitCause(t *testing.T) {
	l := &fakeLauncher{}
	tr := launcherStdio(t, l)
	defer tr.Close()
	if _, err := tr.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-tr.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end after the kill")
	}
	err := tr.Lost()
	if !errors.Is(err, transport.ErrConnectionLost) || !errors.Is(err, errFakeLimit) {
		t.Fatalf("Lost after the kill: %v; want ErrConnectionLost wrapping the launcher's error", err)
	}
	tr.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.launches != 1 || len(l.exits) != 1 {
		t.Fatalf("launches %d, exits %v; want one of each", l.launches, l.exits)
	}
	var ee *exec.ExitError
	if !errors.As(l.exits[0], &ee) {
		t.Fatalf("Exited got %v; want the *exec.ExitError of the SIGKILL", l.exits[0])
	}
}

// TestStdioLauncherCleanExit: a server that exits on Close gets Exited
// with nil, and Close reports nothing.
func TestStdioLauncherCleanExit(t *testing.T) {
	l := &fakeLauncher{}
	tr := launcherStdio(t, l)
	if _, err := tr.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.exits) != 1 || l.exits[0] != nil {
		t.Fatalf("exits %v; want [nil]", l.exits)
	}
}

// TestStdioLauncherStartError: a Launch error fails Connect with ErrStart
// wrapping it; a *PermanentError from the launcher stays findable, so the
// supervisor does not restart a server that cannot start.
func TestStdioLauncherStartError(t *testing.T) {
	cause := errors.New("the kernel lacks a mechanism")
	l := &fakeLauncher{startErr: &transport.PermanentError{Reason: "no mechanism", Err: cause}}
	tr := launcherStdio(t, l)
	defer tr.Close()
	_, err := tr.Connect(context.Background())
	var pe *transport.PermanentError
	if !errors.Is(err, transport.ErrStart) || !errors.Is(err, transport.ErrPermanent) || !errors.Is(err, cause) || !errors.As(err, &pe) {
		t.Fatalf("Connect: %v; want ErrStart, ErrPermanent and the cause", err)
	}
	if tr.Pid() != 0 {
		t.Fatalf("Pid %d after a failed start", tr.Pid())
	}
}
