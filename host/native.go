package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/sandbox/native"
	"github.com/toolhost/toolhost/transport"
)

// This file maps a [servers.NAME] table's sandbox keys to the native
// sandbox (package sandbox/native) and keeps one Launcher per sandboxed
// stdio server; it and plugins.go are the files of package host that know
// the sandboxes.

// ServerSandbox maps the sandbox of the [servers.NAME] table name of cfg
// (a validated configuration) to the native sandbox's Spec. It is the one
// place that knows both, as PluginManifest is for plugins: the Host and
// toolhost check use it.
//
// ok is false, with a nil Spec, when the server's effective sandbox
// (sandbox, default [host] sandbox) is "off". Otherwise the Spec has:
// Mode; Capabilities.Hosts (allowed_hosts), Capabilities.Mounts
// (allowed_paths: guest → host directory with its mode), Capabilities.Memory
// (memory; 0: native.DefaultMemory); Pids (pids; 0: native.DefaultPids);
// Command resolved as the stdio transport resolves it when it starts the
// server (without a slash: exec.LookPath in toolhost's own PATH; a
// relative path with a slash: relative to the configuration file's
// directory); Env, the scrubbed environment the server gets (inherit_env,
// default config.DefaultInheritEnv, taken from toolhost's environment,
// then env, sorted by name); Dir (cwd). The slices are fresh copies.
//
// Errors: ErrUnknownBackend when cfg has no stdio [servers.NAME] table; an
// error wrapping exec.ErrNotFound (and transport.ErrStart) when the
// command is not found in PATH.
func ServerSandbox(cfg *config.Config, name string) (*native.Spec, bool, error) {
	s := cfg.Servers[name]
	if s == nil || !s.IsStdio() {
		return nil, false, fmt.Errorf("%w: %q is not a stdio [servers.NAME] table of the configuration", ErrUnknownBackend, name)
	}
	mode := s.Sandbox
	if mode == "" {
		mode = cfg.Host.Sandbox
	}
	if mode == "" || mode == config.SandboxOff {
		return nil, false, nil
	}
	command, err := serverCommand(cfg, s)
	if err != nil {
		return nil, true, err
	}
	spec := &native.Spec{
		Name: name,
		Mode: native.Mode(mode),
		Capabilities: sandbox.Capabilities{
			Hosts:  slices.Clone(s.AllowedHosts),
			Memory: int64(s.Memory),
		},
		Pids:    s.Pids,
		Command: command,
		Env:     serverEnv(s),
		Dir:     s.Cwd,
	}
	for _, m := range s.Mounts {
		mode := sandbox.MountReadOnly
		if m.ReadWrite {
			mode = sandbox.MountReadWrite
		}
		spec.Mounts = append(spec.Mounts, sandbox.Mount{Host: m.Host, Guest: m.Guest, Mode: mode})
	}
	return spec, true, nil
}

// serverCommand is the program a stdio server runs: a relative path with
// a slash is relative to the configuration file's directory (as in
// Host.build), one without a slash is looked up in toolhost's PATH (as
// the stdio transport does).
func serverCommand(cfg *config.Config, s *config.Server) (string, error) {
	command := s.Command
	if strings.Contains(command, "/") {
		if !filepath.IsAbs(command) {
			command = filepath.Join(cfg.Dir, command)
		}
		return command, nil
	}
	lp, err := exec.LookPath(command)
	if err != nil {
		return "", fmt.Errorf("%w: command %q not found in PATH: %w", transport.ErrStart, command, exec.ErrNotFound)
	}
	return lp, nil
}

// serverEnv is the environment the stdio transport gives server s:
// inherit_env (default config.DefaultInheritEnv) from toolhost's own
// environment, then env.
func serverEnv(s *config.Server) []string {
	inherit := s.InheritEnv
	if inherit == nil {
		inherit = config.DefaultInheritEnv
	}
	var env []string
	for _, k := range inherit {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		env = append(env, k+"="+s.Env[k])
	}
	return env
}

// planSpec is native.Spec.Plan; tests replace it to simulate a kernel
// without a mechanism.
var planSpec = (*native.Spec).Plan

// serverSandbox is a sandboxed stdio server's native sandbox: its plan and
// Launcher, made at its first start and kept across restarts (the
// Launcher counts the denials of every start). A plan that fails is made
// again at the next start.
type serverSandbox struct {
	cfg    *config.Config
	name   string
	mode   string
	logger hclog.Logger

	mu       sync.Mutex
	launcher *native.Launcher // nil until a plan succeeds
}

// newServerSandbox returns the sandbox of stdio server s, or nil when its
// effective sandbox is "off".
func newServerSandbox(cfg *config.Config, s *config.Server, logger hclog.Logger) *serverSandbox {
	if !s.IsStdio() || s.Sandbox == "" || s.Sandbox == config.SandboxOff {
		return nil
	}
	return &serverSandbox{cfg: cfg, name: s.Name, mode: s.Sandbox, logger: logger}
}

// get returns the Launcher, planning the sandbox first if no earlier
// start did. Errors wrap transport.ErrStart; those restarting cannot cure (a
// mechanism that strict mode needs and the kernel lacks,
// native.ErrUnavailable; a spec the sandbox refuses, native.ErrSpec) are
// also a *transport.PermanentError.
func (sb *serverSandbox) get() (*native.Launcher, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.launcher != nil {
		return sb.launcher, nil
	}
	spec, _, err := ServerSandbox(sb.cfg, sb.name)
	var plan *native.Plan
	if err == nil {
		plan, err = planSpec(spec)
	}
	if err != nil {
		if !errors.Is(err, transport.ErrStart) {
			err = fmt.Errorf("%w: %w", transport.ErrStart, err) // native's errors name the server, the mode and the step
		}
		switch {
		case errors.Is(err, native.ErrUnavailable) && sb.mode == config.SandboxStrict:
			err = &transport.PermanentError{Reason: "the kernel lacks a mechanism sandbox = \"strict\" needs (set sandbox = \"best-effort\" to run with what it offers)", Err: err}
		case errors.Is(err, native.ErrUnavailable):
			err = &transport.PermanentError{Reason: "the kernel lacks a mechanism every native sandbox needs (the error names it)", Err: err}
		case errors.Is(err, native.ErrSpec):
			err = &transport.PermanentError{Reason: "the server's sandbox configuration is invalid", Err: err}
		}
		return nil, err
	}
	if len(plan.Missing) > 0 {
		sb.logger.Warn("sandbox = \"best-effort\": running without what the kernel does not offer", "missing", strings.Join(plan.Missing, ", "))
	}
	sb.launcher = native.New(plan, sb.logger.Named("sandbox"))
	return sb.launcher, nil
}

// status fills in the sandbox fields of a BackendStatus.
func (sb *serverSandbox) status(st *BackendStatus) {
	sb.mu.Lock()
	l := sb.launcher
	sb.mu.Unlock()
	st.Sandbox = sb.mode
	if l == nil {
		return
	}
	plan := l.Plan()
	st.Sandbox = SandboxText(plan)
	st.SandboxMechanisms = SandboxMechanisms(plan)
	d := l.Denials()
	st.Denials, st.LastDenial, st.LastDenialAt = d.Count, d.Last, d.LastAt
}

// SandboxText is a plan's effective sandbox for people: its mode, and in
// best-effort mode what the kernel did not offer ("best-effort (missing:
// seccomp)"). toolhost check and status print it.
func SandboxText(plan *native.Plan) string {
	if plan == nil {
		return config.SandboxOff
	}
	t := string(plan.Spec.Mode)
	if len(plan.Missing) > 0 {
		t += " (missing: " + strings.Join(plan.Missing, ", ") + ")"
	}
	return t
}

// SandboxMechanisms names the mechanisms a plan runs the server with, for
// people: the namespaces, the Landlock ruleset (with the kernel's ABI
// version), the seccomp filter, and what enforces memory and pids.
func SandboxMechanisms(plan *native.Plan) []string {
	if plan == nil {
		return nil
	}
	var out []string
	m := plan.Mechanisms
	if m.UserNS {
		out = append(out, "user, pid, mount, network, IPC and UTS namespaces")
	}
	if m.Landlock > 0 {
		out = append(out, fmt.Sprintf("Landlock ABI %d", m.Landlock))
	}
	if m.Seccomp {
		out = append(out, "seccomp filter")
	}
	if plan.MemoryBy != "" {
		out = append(out, "memory by "+plan.MemoryBy)
	}
	if plan.PidsBy != "" {
		out = append(out, "pids by "+plan.PidsBy)
	}
	return out
}

// failedStart is the transport of a sandboxed server whose sandbox could
// not be planned: Connect fails with why, so the supervisor treats it as
// any failed start (retried with backoff, or failed at once when err is a
// *transport.PermanentError) and every other backend keeps serving.
type failedStart struct{ err error }

var _ transport.Transport = failedStart{}

func (f failedStart) Connect(context.Context) (*mcp.InitializeResult, error) { return nil, f.err }
func (failedStart) ListTools(context.Context) ([]*mcp.Tool, error) {
	return nil, transport.ErrNotConnected
}
func (failedStart) CallTool(context.Context, *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	return nil, transport.ErrNotConnected
}
func (failedStart) ListResources(context.Context) ([]*mcp.Resource, error) {
	return nil, transport.ErrNotConnected
}
func (failedStart) ReadResource(context.Context, *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return nil, transport.ErrNotConnected
}
func (failedStart) ListPrompts(context.Context) ([]*mcp.Prompt, error) {
	return nil, transport.ErrNotConnected
}
func (failedStart) GetPrompt(context.Context, *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return nil, transport.ErrNotConnected
}
func (failedStart) Ping(context.Context) error { return transport.ErrNotConnected }
func (failedStart) Close() error               { return nil }
