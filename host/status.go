package host

import (
	"sort"
	"strings"
	"time"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/transport"
)

// BackendStatus is a snapshot of one backend.
type BackendStatus struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"` // "stdio", "http", "wasm" or "custom" (Host.Add)
	State State  `json:"state"`
	// Tools is the number of tools the backend offers (the list of its
	// last start; 0 before its first).
	Tools  int       `json:"tools"`
	Pid    int       `json:"pid,omitempty"`    // the child's process ID (stdio, while running)
	Server string    `json:"server,omitempty"` // serverInfo name and version
	Since  time.Time `json:"since"`            // when State was entered
	// StartedAt is when the current connection became ready, and
	// UptimeSeconds the time since (while ready).
	StartedAt     time.Time `json:"started_at,omitzero"`
	UptimeSeconds float64   `json:"uptime_seconds,omitempty"`
	// Restarts counts restart attempts since the Host was built (by policy
	// and by Host.Restart).
	Restarts int `json:"restarts"`
	// NextRestart is when the next attempt is due (StateRestarting; zero
	// for the moment between a lost connection and its supervisor's
	// decision).
	NextRestart time.Time `json:"next_restart,omitzero"`
	// Health is HealthOK, HealthFailing, HealthUnknown or HealthOff;
	// HealthFailures the consecutive failed checks and HealthError the
	// last failure.
	Health         string `json:"health"`
	HealthFailures int    `json:"health_failures,omitempty"`
	HealthError    string `json:"health_error,omitempty"`
	// Circuit is the state of the backend's circuit breaker ("closed",
	// "open", "half-open"); OpenTools the catalogue names of its tools
	// whose own breaker is not closed.
	Circuit   string   `json:"circuit"`
	OpenTools []string `json:"open_tools,omitempty"`
	// CircuitFrom says where the backend's open circuit came from when it
	// was not opened by this process: "store: REPLICA#INSTANCE" (another
	// replica, or this host before a restart; breaker_store.go).
	// OpenToolsFrom says the same of OpenTools, by catalogue name.
	CircuitFrom   string            `json:"circuit_from,omitempty"`
	OpenToolsFrom map[string]string `json:"open_tools_from,omitempty"`
	// StdoutSkipped counts the lines of a stdio server's stdout that were
	// skipped on its current connection: lines that are not JSON (a
	// banner; see strict_stdout) and responses over max_output.
	StdoutSkipped int    `json:"stdout_skipped,omitempty"`
	LastError     string `json:"last_error,omitempty"`
	// Err is the last error itself, for errors.Is (transport.ErrStart,
	// transport.ErrInitialize, ErrUnhealthy, ...).
	Err error `json:"-"`
	// Sandbox is a stdio server's effective sandbox: "off", "strict",
	// "best-effort", and once its sandbox is planned (at its first
	// start) "best-effort (missing: ...)" with what the kernel lacks.
	// SandboxMechanisms are the mechanisms it runs with (see
	// SandboxMechanisms). Containment, for a server whose sandbox is
	// "off", is the default containment it is started with
	// (transport.Containment; "" before the first start).
	Sandbox           string   `json:"sandbox,omitempty"`
	SandboxMechanisms []string `json:"sandbox_mechanisms,omitempty"`
	Containment       string   `json:"containment,omitempty"`
	// Denials counts what a sandboxed server was refused (egress to a host
	// not in allowed_hosts), across its restarts; LastDenial is the last
	// one, as logged, and LastDenialAt when it came.
	Denials      int64     `json:"denials,omitempty"`
	LastDenial   string    `json:"last_denial,omitempty"`
	LastDenialAt time.Time `json:"last_denial_at,omitzero"`
	// Source is where an OCI plugin's module came from at its last start:
	// "REF → sha256:HEX (pulled)", "(cached)", or "(cached, registry
	// unreachable)" when the registry could not be reached and the module
	// last resolved for REF runs. Empty for other backends.
	Source string `json:"source,omitempty"`
}

// Status returns a snapshot of every backend, sorted by name. Its texts
// (LastError, HealthError, LastDenial) have the configuration's secrets
// replaced by "[REDACTED]", as the audit log's (Err is the error itself).
func (h *Host) Status() []BackendStatus {
	out := make([]BackendStatus, 0, len(h.all()))
	now := time.Now()
	scrub := secretScrubber(h.config())
	for _, b := range h.all() {
		b.mu.Lock()
		st := BackendStatus{Name: b.name, Kind: b.kind, State: b.state, Since: b.since, Tools: len(b.tools),
			Restarts: b.restarts, Health: HealthUnknown, Circuit: CircuitClosed}
		if b.lastErr != nil {
			st.Err, st.LastError = b.lastErr, b.lastErr.Error()
		}
		st.Source = b.source
		if b.init != nil && b.init.ServerInfo != nil {
			st.Server = strings.TrimSpace(b.init.ServerInfo.Name + " " + b.init.ServerInfo.Version)
		}
		switch b.state {
		case StateReady:
			st.StartedAt = b.started
			st.UptimeSeconds = now.Sub(b.started).Round(time.Millisecond).Seconds()
			switch {
			case b.healthFails > 0:
				st.Health, st.HealthFailures = HealthFailing, b.healthFails
			case !b.healthAt.IsZero() && b.healthAt.After(b.started):
				st.Health = HealthOK
			}
		case StateRestarting:
			st.NextRestart = b.next
		}
		if b.healthErr != nil {
			st.HealthError = b.healthErr.Error()
		}
		if b.sv.HealthCheck == config.HealthNone {
			st.Health = HealthOff
		}
		if b.br != nil {
			st.Circuit, st.CircuitFrom = b.br.state(), b.br.from()
		}
		for name, tb := range b.toolBr {
			if tb.state() != CircuitClosed {
				st.OpenTools = append(st.OpenTools, name)
			}
		}
		// Tools open from the store (breaker_store.go), called here or not.
		st.OpenToolsFrom = b.hooks.breakers.liveTools(b.name)
		for name := range st.OpenToolsFrom {
			if tb := b.toolBr[name]; tb == nil || tb.remote.live() == nil {
				st.OpenTools = append(st.OpenTools, name)
			}
		}
		tr := b.tr
		b.mu.Unlock()
		sort.Strings(st.OpenTools)
		if p, ok := tr.(interface{ Pid() int }); ok {
			st.Pid = p.Pid()
		}
		if p, ok := tr.(interface{ SkippedLines() int }); ok {
			st.StdoutSkipped = p.SkippedLines()
		}
		switch {
		case b.sandbox != nil:
			b.sandbox.status(&st)
		case b.kind == KindStdio:
			st.Sandbox, st.Containment = config.SandboxOff, transport.Containment()
		}
		if scrub != nil {
			// A server's last stderr lines are in its errors: they may
			// echo a secret of the configuration (its env).
			st.LastError, st.HealthError, st.LastDenial = scrub.Replace(st.LastError), scrub.Replace(st.HealthError), scrub.Replace(st.LastDenial)
		}
		out = append(out, st)
	}
	return out
}
