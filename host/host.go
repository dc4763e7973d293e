// Package host is toolhost's embeddable tool host: it builds every configured
// backend (external MCP servers and WebAssembly plugins) behind the
// transport.Transport interface, connects them concurrently, and serves one
// catalogue of namespaced tools, routing each call to its backend.
//
// A backend that fails to start or dies never fails the catalogue or calls to
// the other backends: it shows as failed in Status, with its error, and calls
// to its tools fail with ErrBackendUnavailable.
package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/transport"
)

// DefaultStartupTimeout bounds one backend's Connect and first tools/list in
// New when the caller's context has no earlier deadline. It is generous
// because `npx -y` may download its package on a first start.
const DefaultStartupTimeout = 60 * time.Second

// ToolNamePattern is what every catalogue name matches, so names pass
// unchanged to LLM function-calling APIs.
var ToolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Options configures a Host. Nil and the zero value are valid.
type Options struct {
	// Logger is the parent of one named sub-logger per backend (a child's
	// stderr and a plugin's log calls go there). Default: a null logger.
	Logger hclog.Logger

	// StartupTimeout overrides DefaultStartupTimeout.
	StartupTimeout time.Duration

	// TerminateGrace is passed to stdio transports (see
	// transport.StdioOptions.TerminateGrace). Default 2s.
	TerminateGrace time.Duration

	// Audit, when set, receives one AuditRecord per call attempt (the same
	// records [host] audit_log gets), synchronously, before the call returns.
	// It must not block for long and must be safe for concurrent use.
	Audit func(AuditRecord)
}

// State is a backend's lifecycle state.
type State string

// Backend states.
const (
	StateStarting State = "starting" // Connect in progress
	StateReady    State = "ready"    // connected; its tools are in the catalogue
	StateFailed   State = "failed"   // failed to start or lost; see LastError
	StateClosed   State = "closed"   // the Host was closed
)

// Kinds of backend, as reported in Status.
const (
	KindStdio  = "stdio"
	KindHTTP   = "http"
	KindPlugin = "wasm"
)

// Tool is one catalogue entry: the backend's definition with Name replaced by
// the namespaced catalogue name.
type Tool struct {
	*mcp.Tool
	// Backend is the name of the backend that serves the tool.
	Backend string
	// BackendTool is the tool's own name on its backend.
	BackendTool string
}

// Prompt is one catalogue prompt, namespaced like tools.
type Prompt struct {
	*mcp.Prompt
	Backend       string
	BackendPrompt string
}

// Resource is one resource with the backend that serves it. URIs are not
// namespaced: they are the backend's own.
type Resource struct {
	*mcp.Resource
	Backend string
}

// BackendStatus is a snapshot of one backend.
type BackendStatus struct {
	Name      string    `json:"name"`
	Kind      string    `json:"kind"`
	State     State     `json:"state"`
	Tools     int       `json:"tools"`
	Pid       int       `json:"pid,omitempty"`
	Server    string    `json:"server,omitempty"` // serverInfo name and version
	Since     time.Time `json:"since"`            // when State was entered
	LastError string    `json:"last_error,omitempty"`
	// Err is the last error itself, for errors.Is (transport.ErrStart,
	// transport.ErrInitialize, ...).
	Err error `json:"-"`
}

type backend struct {
	name    string
	kind    string
	prefix  string
	timeout time.Duration
	tr      transport.Transport
	logger  hclog.Logger

	mu      sync.Mutex
	state   State
	since   time.Time
	lastErr error
	init    *mcp.InitializeResult
	tools   []*mcp.Tool

	// From the configuration: tools and deny_tools, and the cap on a
	// result's JSON encoding that the host checks (servers only: the
	// sandbox enforces a plugin's own).
	allow, deny []config.Rule
	maxOutput   int
}

func (b *backend) set(state State, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == StateClosed {
		return
	}
	b.state, b.since = state, time.Now()
	if err != nil {
		b.lastErr = err
	}
}

func (b *backend) ready() (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == StateReady, b.lastErr
}

type entry struct {
	b    *backend
	name string // backend's own name
	tool *mcp.Tool
	in   *jsonschema.Schema // compiled inputSchema; nil: nothing to check
	out  *jsonschema.Schema // compiled outputSchema; nil: nothing to check
}

// Host serves one catalogue over many backends. Its methods are safe for
// concurrent use.
type Host struct {
	cfg      *config.Config
	opts     Options
	logger   hclog.Logger
	backends []*backend // sorted by name
	byName   map[string]*backend
	closers  []func() error // run by Close after the backends, in order

	audit *auditor
	// noValidate turns argument and output validation off (benchmarks).
	noValidate bool

	mu       sync.RWMutex
	tools    map[string]entry // catalogue name -> entry
	names    []string         // sorted catalogue names
	views    map[string]*view // profile name ("" for none) -> view
	excluded []Excluded
	closed   bool
	closeMu  sync.Mutex
}

// New builds a backend for every server and plugin in cfg, connects them all
// concurrently, and builds the catalogue. It waits for every backend to be
// ready or failed (each bounded by Options.StartupTimeout and ctx).
//
// A backend that fails does not fail New: it is reported by Status. New
// returns an error only when the catalogue itself is invalid: two tools that
// map to the same name (ErrNameCollision, naming both sources), a backend
// that cannot be built from cfg, or an audit log that cannot be opened
// (ErrAudit). On error, everything started is stopped.
func New(ctx context.Context, cfg *config.Config, opts *Options) (*Host, error) {
	h := &Host{cfg: cfg, byName: map[string]*backend{}}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.StartupTimeout <= 0 {
		h.opts.StartupTimeout = DefaultStartupTimeout
	}
	h.logger = h.opts.Logger
	if h.logger == nil {
		h.logger = hclog.NewNullLogger()
	}
	a, err := newAuditor(cfg, h.opts.Audit, h.logger)
	if err != nil {
		return nil, err
	}
	h.audit = a
	h.closers = append(h.closers, a.close)
	if err := h.build(); err != nil {
		h.Close()
		return nil, err
	}
	var wg sync.WaitGroup
	for _, b := range h.backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.start(ctx, b)
		}()
	}
	wg.Wait()
	if err := h.rebuild(); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

func (h *Host) callTimeout(own config.Duration) time.Duration {
	if own > 0 {
		return own.Std()
	}
	if h.cfg.Host.CallTimeout > 0 {
		return h.cfg.Host.CallTimeout.Std()
	}
	return config.DefaultCallTimeout
}

func prefixOf(name string, p *string) string {
	if p == nil {
		return name + "__"
	}
	return *p
}

// build creates (but does not connect) every backend.
func (h *Host) build() error {
	for _, name := range sortedKeys(h.cfg.Servers) {
		s := h.cfg.Servers[name]
		b := &backend{name: name, prefix: prefixOf(name, s.Prefix), timeout: h.callTimeout(s.Timeout),
			logger: h.logger.Named(name), state: StateStarting, since: time.Now(),
			allow: s.ToolRules, deny: s.DenyToolRules, maxOutput: int(s.MaxOutput)}
		if b.maxOutput <= 0 {
			b.maxOutput = config.DefaultMaxOutput
		}
		if s.IsStdio() {
			inherit := s.InheritEnv
			if inherit == nil {
				inherit = config.DefaultInheritEnv
			}
			command := s.Command
			if strings.Contains(command, "/") && !filepath.IsAbs(command) {
				// A relative program path is relative to the configuration
				// file, like every other path in it.
				command = filepath.Join(h.cfg.Dir, command)
			}
			b.kind = KindStdio
			b.tr = transport.NewStdio(transport.Command{Path: command, Args: s.Args, Env: s.Env, InheritEnv: inherit, Dir: s.Cwd},
				&transport.StdioOptions{Logger: b.logger, TerminateGrace: h.opts.TerminateGrace})
		} else {
			b.kind = KindHTTP
			b.tr = transport.NewHTTP(s.URL, &transport.HTTPOptions{Headers: s.Headers, Logger: b.logger})
		}
		h.add(b)
	}
	if len(h.cfg.Plugins) > 0 {
		if err := h.buildPlugins(); err != nil {
			return err
		}
	}
	sort.Slice(h.backends, func(i, j int) bool { return h.backends[i].name < h.backends[j].name })
	return nil
}

func (h *Host) add(b *backend) {
	h.backends = append(h.backends, b)
	h.byName[b.name] = b
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// start connects b and lists its tools.
func (h *Host) start(ctx context.Context, b *backend) {
	ctx, cancel := context.WithTimeout(ctx, h.opts.StartupTimeout)
	defer cancel()
	t0 := time.Now()
	init, err := b.tr.Connect(ctx)
	if err == nil {
		var tools []*mcp.Tool
		tools, err = b.tr.ListTools(ctx)
		b.mu.Lock()
		b.init, b.tools = init, tools
		b.mu.Unlock()
	}
	if err != nil {
		b.logger.Error("backend failed to start", "error", err)
		b.set(StateFailed, err)
		return
	}
	b.logger.Info("backend ready", "tools", len(b.tools), "elapsed", time.Since(t0).Round(time.Millisecond))
	b.set(StateReady, nil)
}

var invalidNameChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// catalogueName maps a backend tool name to its catalogue name: prefix +
// name, with characters outside [A-Za-z0-9_-] replaced by "_", and a name
// longer than 64 characters shortened to 55 characters + "_" + 8 hex digits
// of its SHA-256, so it stays unique and stable.
func catalogueName(prefix, name string) string {
	full := invalidNameChars.ReplaceAllString(prefix+name, "_")
	if len(full) > 64 {
		sum := sha256.Sum256([]byte(prefix + name))
		full = full[:55] + "_" + hex.EncodeToString(sum[:4])
	}
	return full
}

// rebuild recomputes the catalogue from the ready backends' tool lists: it
// leaves out the tools a backend's tools/deny_tools exclude and those whose
// schemas do not compile, and decides every tool for every profile.
func (h *Host) rebuild() error {
	tools := map[string]entry{}
	var excluded []Excluded
	var errs []error
	for _, b := range h.backends {
		b.mu.Lock()
		list, state := b.tools, b.state
		b.mu.Unlock()
		if state != StateReady {
			continue
		}
		for _, t := range list {
			if ok, rule := config.ToolAllowed(b.allow, b.deny, t.Name); !ok {
				b.logger.Debug("tool excluded by the backend's tools/deny_tools", "tool", t.Name, "rule", rule)
				excluded = append(excluded, Excluded{Backend: b.name, Tool: t.Name, Reason: rule})
				continue
			}
			name := catalogueName(b.prefix, t.Name)
			if name != b.prefix+t.Name {
				b.logger.Warn("tool name rewritten to fit ^[A-Za-z0-9_-]{1,64}$", "tool", t.Name, "name", name)
			}
			if prev, ok := tools[name]; ok {
				errs = append(errs, fmt.Errorf("%w: %q is both %s's tool %q and %s's tool %q; set prefix on one of the backends",
					ErrNameCollision, name, prev.b.name, prev.name, b.name, t.Name))
				continue
			}
			in, err := compileSchema(name, "inputSchema", t.InputSchema)
			var out *jsonschema.Schema
			if err == nil {
				out, err = compileSchema(name, "outputSchema", t.OutputSchema)
			}
			if err != nil {
				b.logger.Error("tool dropped: its schema does not compile", "tool", t.Name, "error", err)
				excluded = append(excluded, Excluded{Backend: b.name, Tool: t.Name, Reason: err.Error()})
				continue
			}
			cp := *t
			cp.Name = name
			tools[name] = entry{b: b, name: t.Name, tool: &cp, in: in, out: out}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	names := sortedKeys(tools)
	views := h.buildViews(tools, names)
	h.mu.Lock()
	h.tools, h.names, h.views, h.excluded = tools, names, views, excluded
	h.mu.Unlock()
	return nil
}

// Tools returns the catalogue as the global [policy] allows it, sorted by
// name. Each Tool's definition is a copy; callers may keep and modify it.
func (h *Host) Tools(ctx context.Context) ([]Tool, error) { return h.viewTools("") }

func (h *Host) viewTools(profile string) ([]Tool, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return nil, ErrClosed
	}
	vw := h.views[profile]
	out := make([]Tool, 0, len(vw.names))
	for _, n := range vw.names {
		e := h.tools[n]
		cp := *e.tool
		out = append(out, Tool{Tool: &cp, Backend: e.b.name, BackendTool: e.name})
	}
	return out, nil
}

// CallTool calls the catalogue tool name with args, which must be nil (no
// arguments), a JSON object as json.RawMessage or []byte, or a value that
// encodes to a JSON object (a map or a struct). It applies the global
// [policy] only; View.CallTool applies a profile too.
//
// Before the call leaves the host: a tool the policy excludes is refused
// with a *ToolNotAllowedError (ErrToolNotAllowed); arguments that do not
// match the tool's inputSchema make a result with IsError set whose text
// names each wrong field and why (MCP 2025-11-25, server/tools: input
// validation errors are tool errors), and the backend is not called. After
// it: a result whose JSON encoding exceeds the backend's max_output is
// ErrOutputTooLarge, and structuredContent that does not match the tool's
// outputSchema is ErrInvalidOutput.
//
// The call's deadline is the backend's timeout (else [host] call_timeout,
// default 30s), or ctx's deadline if earlier. A tool that ran and failed is a
// result with IsError set, not an error. Errors: ErrUnknownTool,
// ErrToolNotAllowed, ErrInvalidArguments, ErrBackendUnavailable, ErrTimeout
// (with context.DeadlineExceeded), context.Canceled, ErrConnectionLost,
// ErrOutputTooLarge, ErrInvalidOutput, ErrClosed, or the backend's protocol
// error. Every attempt but one on a closed Host is audited (Options.Audit,
// [host] audit_log) before CallTool returns.
func (h *Host) CallTool(ctx context.Context, name string, args any) (*mcp.CallToolResult, error) {
	return h.call(ctx, "", name, args)
}

// rawArgs turns the accepted argument forms into the JSON text of an object
// ("{}" for none). On error it also returns what it could make of args, for
// the audit record.
func rawArgs(args any) ([]byte, error) {
	var raw []byte
	switch a := args.(type) {
	case nil:
		return []byte("{}"), nil
	case json.RawMessage:
		raw = a
	case []byte:
		raw = a
	case string:
		raw = []byte(a)
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidArguments, err)
		}
		raw = b
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return []byte("{}"), nil
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return trimmed, fmt.Errorf("%w: want a JSON object, got %s", ErrInvalidArguments, describeJSON(string(trimmed)))
	}
	return trimmed, nil
}

func describeJSON(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return "invalid JSON (" + err.Error() + ")"
	}
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// Prompts returns every ready backend's prompts, namespaced like tools.
// Backends without the prompts capability contribute none; a backend whose
// listing fails is skipped and logged.
func (h *Host) Prompts(ctx context.Context) ([]Prompt, error) {
	var out []Prompt
	for _, b := range h.readyBackends() {
		var ps []*mcp.Prompt
		err := bounded(ctx, b, func(ctx context.Context) (err error) { ps, err = b.tr.ListPrompts(ctx); return })
		if err != nil {
			if !errors.Is(err, transport.ErrUnsupported) {
				b.logger.Warn("prompts/list failed", "error", err)
			}
			continue
		}
		for _, p := range ps {
			cp := *p
			cp.Name = catalogueName(b.prefix, p.Name)
			out = append(out, Prompt{Prompt: &cp, Backend: b.name, BackendPrompt: p.Name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// GetPrompt renders the namespaced prompt name with args. Errors as CallTool;
// an unknown name wraps ErrUnknownTool.
func (h *Host) GetPrompt(ctx context.Context, name string, args map[string]string) (res *mcp.GetPromptResult, err error) {
	ps, err := h.Prompts(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		if p.Name == name {
			b := h.byName[p.Backend]
			err = bounded(ctx, b, func(ctx context.Context) (err error) {
				res, err = b.tr.GetPrompt(ctx, &mcp.GetPromptParams{Name: p.BackendPrompt, Arguments: args})
				return
			})
			return res, err
		}
	}
	return nil, fmt.Errorf("prompt %q: %w", name, ErrUnknownTool)
}

// Resources returns every ready backend's resources with their backend.
func (h *Host) Resources(ctx context.Context) ([]Resource, error) {
	var out []Resource
	for _, b := range h.readyBackends() {
		var rs []*mcp.Resource
		err := bounded(ctx, b, func(ctx context.Context) (err error) { rs, err = b.tr.ListResources(ctx); return })
		if err != nil {
			if !errors.Is(err, transport.ErrUnsupported) {
				b.logger.Warn("resources/list failed", "error", err)
			}
			continue
		}
		for _, r := range rs {
			out = append(out, Resource{Resource: r, Backend: b.name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URI < out[j].URI })
	return out, nil
}

// ReadResource reads uri from backend (a backend name, as in Resource).
func (h *Host) ReadResource(ctx context.Context, backend, uri string) (res *mcp.ReadResourceResult, err error) {
	b, ok := h.byName[backend]
	if !ok {
		return nil, fmt.Errorf("%w: no backend %q", ErrBackendUnavailable, backend)
	}
	if ok, lastErr := b.ready(); !ok {
		return nil, fmt.Errorf("%w: backend %q: %w", ErrBackendUnavailable, backend, lastErr)
	}
	err = bounded(ctx, b, func(ctx context.Context) (err error) {
		res, err = b.tr.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		return
	})
	return res, err
}

// bounded runs f with ctx bounded by the backend's call timeout.
func bounded(ctx context.Context, b *backend, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	return f(ctx)
}

func (h *Host) readyBackends() []*backend {
	var out []*backend
	for _, b := range h.backends {
		if ok, _ := b.ready(); ok {
			out = append(out, b)
		}
	}
	return out
}

// Status returns a snapshot of every backend, sorted by name.
func (h *Host) Status() []BackendStatus {
	out := make([]BackendStatus, 0, len(h.backends))
	for _, b := range h.backends {
		b.mu.Lock()
		st := BackendStatus{Name: b.name, Kind: b.kind, State: b.state, Since: b.since, Tools: len(b.tools)}
		if b.state != StateReady {
			st.Tools = 0
		}
		if b.lastErr != nil {
			st.Err, st.LastError = b.lastErr, b.lastErr.Error()
		}
		if b.init != nil && b.init.ServerInfo != nil {
			st.Server = strings.TrimSpace(b.init.ServerInfo.Name + " " + b.init.ServerInfo.Version)
		}
		b.mu.Unlock()
		if p, ok := b.tr.(interface{ Pid() int }); ok {
			st.Pid = p.Pid()
		}
		out = append(out, st)
	}
	return out
}

// Close closes every backend concurrently and waits until all their
// goroutines and child processes are gone. It is idempotent and safe to call
// from any goroutine; calls after the first return nil.
func (h *Host) Close() error {
	h.closeMu.Lock()
	defer h.closeMu.Unlock()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(h.backends))
	for i, b := range h.backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.tr.Close(); err != nil {
				errs[i] = fmt.Errorf("closing %s: %w", b.name, err)
				b.logger.Warn("close", "error", err)
			}
			b.mu.Lock()
			b.state, b.since = StateClosed, time.Now()
			b.mu.Unlock()
		}()
	}
	wg.Wait()
	for _, c := range h.closers {
		if err := c(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
