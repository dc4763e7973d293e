package main

import (
	"fmt"
	"strings"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/transport"
)

// checkSandboxes prints the effective sandbox of every stdio server: its
// mode and, when it is not off, its plan (computed as the host computes
// it at the server's first start; nothing is started): the paths it sees
// with their modes and why, its hosts, its limits with the mechanism
// enforcing each, the mechanisms the kernel offered and, in best-effort
// mode, what is missing. A sandbox that cannot run (strict mode on a
// kernel without a mechanism, a spec the sandbox refuses) is an error:
// the server would fail at start.
func (c *cli) checkSandboxes(cfg *config.Config) int {
	code := exitOK
	for _, name := range cfg.ServerNames() {
		s := cfg.Servers[name]
		if !s.IsStdio() {
			continue
		}
		spec, ok, err := host.ServerSandbox(cfg, name)
		if err == nil && !ok {
			fmt.Fprintf(c.stdout, "server %s: sandbox off (no native sandbox; the default containment: %s)\n", name, containmentText())
			continue
		}
		if err == nil {
			plan, perr := spec.Plan()
			if perr == nil {
				fmt.Fprintf(c.stdout, "server %s:\n", name)
				for _, l := range plan.Lines() {
					fmt.Fprintf(c.stdout, "  %s\n", esc(l))
				}
				continue
			}
			err = perr
		}
		fmt.Fprintf(c.stdout, "server %s: sandbox %s: CANNOT RUN: the server would fail at start\n", name, s.Sandbox)
		fmt.Fprintf(c.stderr, "toolhost: server %s: sandbox = %q: %s\n", name, s.Sandbox, esc(err.Error()))
		code = exitUsage
	}
	return code
}

// containmentText is transport.Containment, or what it will be where no
// server has started yet.
func containmentText() string {
	if c := transport.Containment(); c != "" {
		return c
	}
	return "its own PID namespace and /proc where the kernel allows, the environment scrubbed"
}

// sandboxText is a backend's sandbox for the status table: its effective
// mode ("strict", "best-effort (missing: ...)"), or for an unsandboxed
// stdio server "off" with its containment; "-" for backends without one.
func sandboxText(s host.BackendStatus) string {
	switch {
	case s.Sandbox == "":
		return "-"
	case s.Sandbox == config.SandboxOff && s.Containment != "":
		return "off (" + s.Containment + ")"
	}
	return s.Sandbox
}

// denialLines are the status lines of the backends a sandbox refused
// something: the count and the last refusal.
func denialLines(st []host.BackendStatus) []string {
	var out []string
	for _, s := range st {
		if s.Denials == 0 {
			continue
		}
		at := ""
		if !s.LastDenialAt.IsZero() {
			at = " at " + s.LastDenialAt.Format("15:04:05")
		}
		out = append(out, fmt.Sprintf("%s: %d denied by its sandbox; last%s: %s", s.Name, s.Denials, at, strings.TrimSpace(esc(firstLine(s.LastDenial, 200)))))
	}
	return out
}
