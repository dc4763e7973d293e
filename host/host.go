// Package host is toolhost's embeddable tool host: it builds every configured
// backend (external MCP servers and WebAssembly plugins) behind the
// transport.Transport interface, connects them concurrently, and serves one
// catalogue of namespaced tools, routing each call to its backend.
//
// A backend that fails to start or dies never fails the catalogue or calls to
// the other backends: it shows as failed in Status, with its error, and calls
// to its tools fail with ErrBackendUnavailable.
//
// Every operation on a backend runs through one pipeline of ordered layers
// (pipeline.go; docs/RATIONALE.md says why in this order). The package's
// files, by job:
//
//	host.go            Host, Options, New, Close, Tools and CallTool, building server backends
//	plugins.go         building plugin backends (the only file that imports sandbox)
//	apply.go           run-time changes: Apply, Enable, Disable, Add, Remove
//	backend.go         one backend: its state, conn/release for operations, faults, breakers, hooks
//	supervisor.go      a backend's supervisor goroutine: start, restart with backoff, idle stop, list_changed; Restart
//	health.go          health checks and CheckHealth
//	status.go          BackendStatus and Status
//	registry.go        the tool catalogue kept in step with the backends; lazy starts for listing
//	resolve.go         finding a tool's backend, waiting for one that is coming
//	pipeline.go        the op (request, destination, outcome), the layers and their compositions
//	layer_*.go         one layer each: audit, resolve, policy, validate, fallback, breaker, deadline, retry, transport
//	call.go            CallTool in a view, its error named once; the audit outcome of an op
//	prompts_resources.go prompts and resources: their policy decisions, listing and get/read
//	policy.go          tool decisions, profiles and View
//	args.go            a tool call's arguments, parsed once before the pipeline
//	validate.go        schema compilation and validation messages
//	audit.go           audit records and the audit log
//	serverlog.go       per-backend log files ([host] log_directory) and Logs
//	breaker.go         the circuit breaker and which errors count as failures
//	asks.go            elicitation, sampling and roots for servers
//	events.go          Subscribe and event delivery
//	errors.go          sentinel and typed errors
//	progress.go        WithProgress
package host

//lint:file-ignore SA1019 logging, sampling and roots are deprecated as of protocol 2026-07-28 (SEP-2577) but servers still use them

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	jsonschema "github.com/toolhost/toolhost/internal/jsonschemav6"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host/store"
	"github.com/toolhost/toolhost/internal/lazyre"
	"github.com/toolhost/toolhost/internal/serverlog"
	"github.com/toolhost/toolhost/transport"
)

// DefaultStartupTimeout is a backend's startup_timeout when its table sets
// none: the bound on one attempt to start it (Connect and the first
// tools/list). It is config.DefaultStartupTimeout (30s), the one source of
// this default; kept here for embedders that read it.
const DefaultStartupTimeout = config.DefaultStartupTimeout

// ToolNamePattern is what every catalogue name matches, so names pass
// unchanged to LLM function-calling APIs.
var ToolNamePattern = lazyre.New(`^[A-Za-z0-9_-]{1,64}$`)

// Options configures a Host. Nil and the zero value are valid.
type Options struct {
	// Logger is the parent of one named sub-logger per backend (a child's
	// stderr and a plugin's log calls go there). Default: a null logger.
	Logger hclog.Logger

	// StartupTimeout, when positive, overrides every backend's
	// startup_timeout (default DefaultStartupTimeout, 30s).
	StartupTimeout time.Duration

	// TerminateGrace is passed to stdio transports (see
	// transport.StdioOptions.TerminateGrace). Default 2s.
	TerminateGrace time.Duration

	// Audit, when set, receives one AuditRecord per call attempt (the same
	// records [host] audit_log gets), synchronously, before the call returns.
	// It must not block for long and must be safe for concurrent use.
	Audit func(AuditRecord)

	// AuditKey is the key of the audit records' ArgsHMAC (HMAC-SHA-256,
	// RFC 2104): at least 32 random bytes (shorter: New fails with
	// ErrAudit). Nil (the default): the key in AuditKeyFile. Used only when
	// auditing is on ([host] audit_log or Audit).
	AuditKey []byte

	// AuditKeyFile is the file the audit key is read from when AuditKey is
	// nil, created (32 random bytes as 64 hex digits, mode 0600, its
	// directory 0700) when missing. Default DefaultAuditKeyFile
	// (os.UserConfigDir()/toolhost/audit.key). A file that is a symbolic
	// link, not owned by this user, or readable or writable by group or
	// others, or a directory writable by them, is refused: New fails with
	// ErrAudit. Rotate the key with RotateAuditKey (toolhost audit
	// rotate-key).
	AuditKeyFile string

	// Events, when set, receives every Event from the start of New on, as
	// a Host.Subscribe callback does (in order, on a goroutine of its own).
	Events func(Event)

	// Elicit, when set, answers MCP servers' elicitation/create requests
	// (the user is asked for input; MCP 2025-11-25, client/elicitation),
	// and every server is told the host supports elicitation (form mode);
	// nil (the default): the capability is not declared and servers'
	// requests are refused. It runs while the server waits, in ctx: the
	// context of the tool call the request belongs to (its values, and its
	// deadline: the call's timeout bounds the answer) when req.Call is set,
	// cancelled also when the server cancels. It must be safe for
	// concurrent use. Its answer is the result the server gets (action
	// "accept" with Content valid for the schema, "decline" or "cancel");
	// an error is sent to the server as a JSON-RPC error. Every request is
	// audited (Op OpElicit).
	Elicit func(ctx context.Context, req *ElicitationRequest) (*mcp.ElicitResult, error)

	// Sample, when set, answers MCP servers' sampling/createMessage
	// requests (an LLM completion; MCP 2025-11-25, client/sampling) and
	// the sampling capability is declared; as Elicit otherwise (audited
	// with Op OpSample).
	Sample func(ctx context.Context, req *SamplingRequest) (*mcp.CreateMessageResult, error)

	// LazyPluginInstances is passed to every plugin as
	// sandbox.PluginOptions.LazyInstances: a plugin whose tools come from
	// the tool-list cache is compiled and instantiated at its first call,
	// not in the background from New on. For a program that only lists
	// the catalogue (toolhost tools). Default false.
	LazyPluginInstances bool

	// CompileOnDemand compiles a tool's inputSchema and outputSchema (JSON
	// Schema, ≈0.1–0.3 ms a tool, more for large schemas) at its first call
	// instead of when its backend lists it. A tool whose schemas do not
	// compile is then still listed, and its first call is the error an
	// unlisted tool gets (*UnknownToolError), logged at Error level once
	// as at a list. For a program that calls one tool and exits (toolhost
	// call), which would otherwise compile every tool of the backend on
	// the call's path. Default false: schemas compile at each tools/list,
	// and a tool whose schemas do not compile is left out of the
	// catalogue.
	CompileOnDemand bool

	// Roots are answered to MCP servers' roots/list (MCP 2025-11-25,
	// client/roots) when the configuration has none for the server ([host]
	// roots or its own roots win); the roots capability is declared only
	// when a server has some (or ListRoots is set).
	Roots []*mcp.Root

	// ListRoots, when set, answers MCP servers' roots/list first, in the
	// context of the tool call it belongs to (as Elicit); when it returns
	// ok false, the configured roots (or Roots) are answered. A gateway
	// sets it to relay the roots of the client that made the call
	// (gateway.Roots).
	ListRoots func(ctx context.Context, req *RootsRequest) (roots []*mcp.Root, ok bool, err error)

	// TokenStore keeps the OAuth tokens of the servers with a
	// [servers.NAME.oauth] table. Nil: a transport.FileTokenStore in
	// transport.DefaultTokenDir (os.UserConfigDir()/toolhost/tokens).
	TokenStore transport.TokenStore

	// Store is where the host keeps its state (audit trail, grants, rate
	// limit buckets, idempotency results, tool pins, breaker state; see
	// host/store). The caller opens and closes it; the host flushes what it
	// queued for it when it is closed. Nil (the default): the host opens
	// the configuration's [store] url itself when it first needs it (and
	// closes it in Close), or, without one, an in-memory SQLite database
	// whose state lasts as long as the Host.
	Store *store.DB

	// Authorize, when set, completes the OAuth authorization-code grant
	// of a server that needs one (no token, or a step-up): it is given
	// the authorization URL and returns the redirect's code and state (a
	// headless client fetches the URL; a GUI opens a browser). Nil (the
	// default): such a server is StateNeedsLogin until `toolhost login
	// NAME` (or NewOAuth with an Authorize) stores a token and
	// Host.Restart starts it.
	Authorize AuthorizeFunc
}

// Kinds of backend, as reported in Status.
const (
	KindStdio  = "stdio"
	KindHTTP   = "http"
	KindPlugin = "wasm"
)

type entry struct {
	b    *backend
	name string // backend's own name
	tool *mcp.Tool
	in   *jsonschema.Schema // compiled inputSchema; nil: nothing to check
	out  *jsonschema.Schema // compiled outputSchema; nil: nothing to check
	// lazy, when set (Options.CompileOnDemand), compiles in and out: the
	// call's resolution runs it (resolveCallLayer).
	lazy func() compiledTool
	opts *config.ToolOptions // its [tools.NAME] table; nil: none
}

// Host serves one catalogue over many backends. Its methods are safe for
// concurrent use.
type Host struct {
	cur     atomic.Pointer[topology] // the configuration and backends in force; see apply.go
	opts    Options
	logger  hclog.Logger
	closers []func() error // run by Close after the backends, in order
	logs    *serverlog.Dir // [host] log_directory; nil when unset

	engine engine // the plugins' engine, once there is one

	// pipe are the pipelines every operation on a backend goes through
	// (see pipeline.go).
	pipe pipelines

	audit *auditor
	// state is the host's store (state.go).
	state stateStore
	// brShare keeps the breakers' state in the store (breaker_store.go);
	// nil without a configured store.
	brShare *breakerShare
	// idem are the keyed calls in flight (idempotency.go).
	idem idempotency
	// rates are the rate limits' buckets (ratelimit.go).
	rates rateLimits
	// noValidate turns argument and output validation off (benchmarks).
	noValidate bool

	// Tool search (issue 27; search.go): the search index of each view.
	searchIdx searchIndexes

	// Supervision: ctx is cancelled and stop closed by Close; wg counts
	// the supervisors and the transports they close in the background.
	ctx       context.Context
	cancel    context.CancelFunc
	stop      chan struct{}
	wg        sync.WaitGroup
	rebuildMu sync.Mutex // serialises catalogue rebuilds
	// dropLogged holds the dropped tools already logged (backend, tool
	// and reason), so that a rebuild for another backend does not log
	// them again; guarded by rebuildMu.
	dropLogged map[[3]string]bool

	subMu     sync.Mutex
	subs      []*subscriber
	subClosed bool

	mu       sync.RWMutex
	tools    map[string]entry // catalogue name -> entry
	names    []string         // sorted catalogue names
	views    map[string]*view // profile name ("" for none) -> view
	excluded []Excluded
	// toolsOff are the catalogue names disabled at run time
	// (toolswitch.go); replaced whole, under mu.
	toolsOff atomic.Pointer[map[string]bool]
	// Tool-definition pinning (pins.go): the pins' cache, and the tools
	// quarantined (nil: none), replaced whole by each rebuild.
	pins       pinState
	quarantine atomic.Pointer[map[string]*quarantine]
	closed     bool
	closeMu    sync.Mutex
}

// New builds a backend for every server and plugin in cfg, starts a
// supervisor for each (see Host.Status for what it tracks) and builds the
// catalogue. It waits until every eager backend is ready or its first
// attempt has failed, each bounded by its startup_timeout
// (Options.StartupTimeout overrides it), or until ctx is done; lazy
// backends start on first use. A backend still starting when New returns
// joins the catalogue when it is ready (an EventCatalogue tells).
//
// A backend with enabled = false in cfg is built (so a bad table still
// fails New) but never started: Status shows it StateDisabled and calls to
// its tools fail with ErrBackendUnavailable and ErrBackendDisabled.
//
// A backend that fails does not fail New: it is restarted by policy and
// reported by Status. New returns an error only when the catalogue itself
// is invalid: a backend that cannot be built from cfg, or an audit log
// that cannot be opened (ErrAudit). On error, everything started is
// stopped. Two tools that map to the same catalogue name do not fail it:
// the one that came later is left out (see Host.Excluded, whose Reason
// wraps the text of ErrNameCollision naming both sources) and logged at
// Warn; two backends with the same prefix are refused earlier, by
// config.Load.
//
// cfg may come from config.Load or be built in Go: a Config that did not
// pass config.Load, config.Parse or (*config.Config).Validate is validated
// here first (its zero fields get their documented defaults, written into
// cfg), and a problem is returned as that config.ErrorList.
func New(ctx context.Context, cfg *config.Config, opts *Options) (*Host, error) {
	if !cfg.Validated() {
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("host: invalid configuration: %w", err)
		}
	}
	h := &Host{stop: make(chan struct{})}
	h.cur.Store(&topology{cfg: cfg, byName: map[string]*backend{}})
	h.buildPipeline()
	h.ctx, h.cancel = context.WithCancel(context.Background())
	if opts != nil {
		h.opts = *opts
	}
	h.logger = h.opts.Logger
	if h.logger == nil {
		h.logger = hclog.NewNullLogger()
	}
	if h.opts.Events != nil {
		h.Subscribe(h.opts.Events)
	}
	a, err := newAuditor(cfg, &h.opts, h.logger)
	if err != nil {
		h.cancel()
		return nil, err
	}
	h.audit = a
	if storeAuditOn(cfg, &h.opts) { // issue 25: audit records go to the store too (auditstore.go)
		a.store = newAuditStore(h.db, cfg, h.logger)
	}
	h.closers = append(h.closers, a.close)
	if err := h.openLogs(cfg); err != nil {
		h.Close()
		return nil, err
	}
	h.startBreakerShare(ctx) // before any breaker is made (breaker_store.go)
	if err := h.build(); err != nil {
		h.Close()
		return nil, err
	}
	h.mu.Lock()
	h.views = h.buildViews(nil, nil)
	h.mu.Unlock()
	// enabled = false: shown by Status, never started. (All are marked
	// before any supervisor runs and rebuilds the catalogue.)
	t := h.cur.Load()
	for _, b := range h.all() {
		if t.offInConfig(b.name) {
			h.disable(b, true)
		}
	}
	for _, b := range h.all() {
		if !t.offInConfig(b.name) {
			h.launch(b)
		}
	}
	for _, b := range h.all() {
		select {
		case <-b.firstDone:
		case <-ctx.Done():
		}
	}
	h.rebuildMu.Lock()
	// Tool names that collide do not fail New: the later tool is left
	// out, logged and listed by Excluded (see collide).
	_ = h.rebuild(false)
	h.rebuildMu.Unlock()
	for _, p := range h.ToolOptionProblems() {
		h.logger.Warn(p)
	}
	return h, nil
}

// timeoutFrom says where h.callTimeout(own) comes from: timeoutOwn,
// timeoutHost or timeoutDefault.
func (h *Host) timeoutFrom(own config.Duration) int {
	switch {
	case own > 0:
		return timeoutOwn
	case h.config().Host.CallTimeout > 0:
		return timeoutHost
	}
	return timeoutDefault
}

func (h *Host) callTimeout(own config.Duration) time.Duration {
	if own > 0 {
		return own.Std()
	}
	if h.config().Host.CallTimeout > 0 {
		return h.config().Host.CallTimeout.Std()
	}
	return config.DefaultCallTimeout
}

// prefixOf is config.ToolPrefix: the prefix of backend name's tools.
func prefixOf(name string, p *string) string { return config.ToolPrefix(name, p) }

// build creates (but does not connect) every backend.
func (h *Host) build() error {
	for _, name := range sortedKeys(h.config().Servers) {
		s := h.config().Servers[name]
		kind := KindHTTP
		if s.IsStdio() {
			kind = KindStdio
		}
		b := h.newBackend(name, kind, prefixOf(name, s.Prefix), h.callTimeout(s.Timeout), s.Supervision)
		b.timeoutFrom = h.timeoutFrom(s.Timeout)
		b.allow, b.deny, b.maxOutput = s.ToolRules, s.DenyToolRules, int(s.MaxOutput)
		if b.maxOutput <= 0 {
			b.maxOutput = DefaultMaxOutput
		}
		features := h.features(name, s)
		if s.IsStdio() {
			inherit := s.InheritEnv
			if inherit == nil {
				inherit = config.DefaultInheritEnv
			}
			command := s.Command
			if strings.Contains(command, "/") && !filepath.IsAbs(command) {
				// A relative program path is relative to the configuration
				// file, like every other path in it.
				command = filepath.Join(h.config().Dir, command)
			}
			cmd := transport.Command{Path: command, Args: s.Args, Env: s.Env, InheritEnv: inherit, Dir: s.Cwd}
			// A response line may carry a result up to max_output, plus its
			// envelope; a longer one is discarded as it streams.
			maxLine, strict := b.maxOutput+transport.ResponseEnvelope, s.StrictStdout
			// A sandboxed server's Launcher is made at its first start
			// and kept across restarts (see serverSandbox).
			b.sandbox = newServerSandbox(h.config(), s, b.logger)
			redact := scrubFunc(h.config()) // the server's stderr quoted in its errors
			b.newTr = func(onChange func(transport.ListKind)) transport.Transport {
				opts := &transport.StdioOptions{Logger: b.logger, TerminateGrace: h.opts.TerminateGrace, OnListChanged: onChange,
					MaxLineLength: maxLine, StrictStdout: strict, Features: features, Redact: redact}
				if b.sandbox != nil {
					l, err := b.sandbox.get()
					if err != nil {
						return failedStart{err}
					}
					opts.Launcher = l
				}
				return transport.NewStdio(cmd, opts)
			}
		} else {
			url, headers := s.URL, s.Headers
			var oauth *transport.OAuth
			if s.OAuth != nil {
				// One per backend: its token outlives each connection.
				var err error
				oauth, err = NewOAuth(h.config(), name, &OAuthConfig{Store: h.opts.TokenStore, Authorize: h.opts.Authorize, Logger: b.logger})
				if err != nil {
					return fmt.Errorf("host: server %q: %w", name, err)
				}
			}
			b.newTr = func(onChange func(transport.ListKind)) transport.Transport {
				return transport.NewHTTP(url, &transport.HTTPOptions{Headers: headers, Logger: b.logger, OnListChanged: onChange, Features: features, OAuth: oauth})
			}
		}
		h.add(b)
	}
	if len(h.config().Plugins) > 0 {
		if err := h.buildPlugins(); err != nil {
			return err
		}
	}
	t := h.cur.Load()
	sort.Slice(t.backends, func(i, j int) bool { return t.backends[i].name < t.backends[j].name })
	return nil
}

func (h *Host) add(b *backend) {
	t := h.cur.Load()
	t.backends = append(t.backends, b)
	t.byName[b.name] = b
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// maxDropLogged bounds Host.dropLogged: a server that keeps announcing new
// broken tools gets them logged again rather than growing it.
const maxDropLogged = 1024

// catalogueName is config.ToolName: the catalogue name of the tool a
// backend with that prefix lists as name.
func catalogueName(prefix, name string) string { return config.ToolName(prefix, name) }

// rebuild recomputes the catalogue from the tool lists of every backend
// that has started at least once (a backend restarting or stopped for
// idleness keeps its tools; calls wait for it): it leaves out the tools a
// backend's tools/deny_tools exclude and those whose schemas do not
// compile, and decides every tool for every profile. A name collision is an
// error when strict (no caller asks for that any more); otherwise one tool
// keeps the name and the other is left out and logged (collide).
// The caller holds rebuildMu.
func (h *Host) rebuild(strict bool) error {
	tools := map[string]entry{}
	var excluded []Excluded
	var errs []error
	for _, b := range h.all() {
		b.mu.Lock()
		list, schemas, known, state := b.tools, b.schemas, b.known, b.state
		b.mu.Unlock()
		if !known || state == StateClosed || state == StateDisabled {
			continue
		}
		for _, t := range list {
			if ok, rule := config.ToolAllowed(b.allow, b.deny, t.Name); !ok {
				b.logger.Debug("tool excluded by the backend's tools/deny_tools", "tool", t.Name, "rule", rule)
				excluded = append(excluded, Excluded{Backend: b.name, Tool: t.Name, Reason: rule})
				continue
			}
			name := catalogueName(b.prefix, t.Name)
			if name != b.prefix+t.Name && b.firstRewrite(t.Name) {
				b.logger.Warn("tool name rewritten to fit ^[A-Za-z0-9_-]{1,64}$", "tool", t.Name, "name", name)
			}
			if prev, ok := tools[name]; ok {
				if h.collide(name, prev, b, t.Name, &errs, &excluded) {
					continue
				}
			}
			c, ok := schemas[t.Name]
			if !ok {
				c = compileTool(name, t)
			}
			in, out, err := c.in, c.out, c.err
			if err != nil && c.lazy == nil {
				if key := [3]string{b.name, t.Name, err.Error()}; !h.dropLogged[key] {
					if h.dropLogged == nil || len(h.dropLogged) >= maxDropLogged {
						h.dropLogged = map[[3]string]bool{}
					}
					h.dropLogged[key] = true
					b.logger.Error("tool dropped: its schema does not compile", "tool", t.Name, "error", err)
				}
				excluded = append(excluded, Excluded{Backend: b.name, Tool: t.Name, Reason: err.Error()})
				continue
			}
			cp := *t
			cp.Name = name
			tools[name] = entry{b: b, name: t.Name, tool: &cp, in: in, out: out, lazy: c.lazy, opts: h.config().Tools[name]}
		}
	}
	if len(errs) > 0 && strict {
		return errors.Join(errs...)
	}
	h.noteCollisions(errs)
	names := sortedKeys(tools)
	views := h.buildViews(tools, names)
	h.setQuarantine(h.pinCheck(tools, false)) // pins.go
	h.notePoison(tools)                       // poison.go
	h.mu.Lock()
	h.tools, h.names, h.views, h.excluded = tools, names, views, excluded
	h.mu.Unlock()
	return nil
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
// validation errors are tool errors), with the kind invalid_arguments in
// its _meta (MetaErrorKind; see ErrorKind), and the backend is not called.
// A tool disabled with DisableTool is refused with a *ToolDisabledError. After
// it: a result whose JSON encoding exceeds the backend's max_output is
// ErrOutputTooLarge, and structuredContent that does not match the tool's
// outputSchema is ErrInvalidOutput.
//
// The call's deadline is the backend's timeout (else [host] call_timeout,
// default 30s), or ctx's deadline if earlier: one deadline, set by the host,
// for the whole attempt: waiting for the backend to be ready (a lazy start,
// a restart, a free plugin instance), the call and any retries, for servers
// and plugins alike. A [tools.NAME] fallback is a new attempt with a
// deadline of its own. A tool that ran and failed is a
// result with IsError set, not an error. Errors: ErrUnknownTool,
// ErrToolNotAllowed, ErrInvalidArguments, ErrBackendUnavailable, ErrTimeout
// (with context.DeadlineExceeded), context.Canceled, ErrConnectionLost,
// ErrOutputTooLarge, ErrInvalidOutput, ErrClosed, or the backend's protocol
// error. Every attempt but one on a closed Host is audited (Options.Audit,
// [host] audit_log) before CallTool returns.
func (h *Host) CallTool(ctx context.Context, name string, args any) (*mcp.CallToolResult, error) {
	return h.call(ctx, "", name, args)
}

func (h *Host) readyBackends() []*backend {
	var out []*backend
	for _, b := range h.all() {
		if ok, _ := b.ready(); ok {
			out = append(out, b)
		}
	}
	return out
}

// Close stops every supervisor, closes every backend concurrently and waits
// until all their goroutines and child processes are gone, then stops event
// delivery. It is idempotent and safe to call from any goroutine; calls
// after the first return nil.
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
	close(h.stop)
	h.cancel()
	// Supervisors return (an attempt in progress is cancelled), and the
	// transports they were closing are closed.
	h.wg.Wait()
	var wg sync.WaitGroup
	all := h.all()
	errs := make([]error, len(all))
	for i, b := range all {
		b.mu.Lock()
		tr := b.tr
		b.tr = nil
		b.mu.Unlock()
		b.setState(StateClosed, nil)
		if tr == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := tr.Close(); err != nil {
				errs[i] = fmt.Errorf("closing %s: %w", b.name, err)
				b.logger.Warn("close", "error", err)
			}
			b.logger.Info("backend stopped") // as retire does; ends its log file
		}()
	}
	wg.Wait()
	for _, c := range h.closers {
		if err := c(); err != nil {
			errs = append(errs, err)
		}
	}
	// After the closers: the audit writer flushes into the store there.
	if err := h.closeStore(); err != nil {
		errs = append(errs, err)
	}
	h.closeSubscribers()
	return errors.Join(errs...)
}
