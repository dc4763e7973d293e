package native

import (
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/toolhost/toolhost/transport"
)

// Launcher starts a server's processes under one Plan (transport.Launcher);
// it lasts as long as the backend, across restarts.
type Launcher struct {
	plan   *Plan
	logger hclog.Logger
	den    denials
}

var _ transport.Launcher = (*Launcher)(nil)

// New returns a Launcher for plan; logger receives the sandbox's own
// diagnostics (denied hosts, limits hit).
func New(plan *Plan, logger hclog.Logger) *Launcher {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Launcher{plan: plan, logger: logger}
}

// Plan returns the launcher's plan.
func (l *Launcher) Plan() *Plan { return l.plan }

// Launch implements transport.Launcher: it starts cmd's program as PID 1
// of new namespaces with the plan's root, network, limits, Landlock
// ruleset, capabilities and seccomp filter (see the package doc), and
// returns once the program runs. Errors: ErrSpec (the program is not
// visible inside the sandbox) and ErrUnavailable (the kernel refused the
// namespaces), both as a *transport.PermanentError; ErrSetup with the
// stage that failed ("mount /work", "pivot_root", "landlock", "exec
// /usr/bin/node") and its errno. On error nothing is left running or open.
func (l *Launcher) Launch(cmd *exec.Cmd) (transport.Launched, error) {
	if l.plan == nil {
		return nil, permanent(fmt.Errorf("%w: the launcher has no plan", ErrSpec))
	}
	return l.launch(cmd)
}

// permanent marks an ErrSpec or ErrUnavailable failure as one that
// restarting cannot cure (transport.ErrPermanent), so the supervisor does
// not restart the server in a loop.
func permanent(err error) error {
	switch {
	case errors.Is(err, ErrSpec):
		return &transport.PermanentError{Reason: "the native sandbox is misconfigured", Err: err}
	case errors.Is(err, ErrUnavailable):
		return &transport.PermanentError{Reason: "the native sandbox needs a mechanism this kernel does not offer", Err: err}
	}
	return err
}

// Denials are the sandbox's refusals that toolhost saw (egress to a host
// not allowed), across the server's restarts.
type Denials struct {
	Count  int64
	Last   string // the last refusal, as logged
	LastAt time.Time
}

// Denials returns the refusals so far.
func (l *Launcher) Denials() Denials { return l.den.snapshot() }
