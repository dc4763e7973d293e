package native

import (
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

// Launch implements transport.Launcher.
func (l *Launcher) Launch(cmd *exec.Cmd) (transport.Launched, error) { return nil, errTODO }

// Denials are the sandbox's refusals that toolhost saw (egress to a host
// not allowed), across the server's restarts.
type Denials struct {
	Count  int64
	Last   string // the last refusal, as logged
	LastAt time.Time
}

// Denials returns the refusals so far.
func (l *Launcher) Denials() Denials { return l.den.snapshot() }
