package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/internal/units"
	"github.com/toolhost/toolhost/internal/wasmfile"
	"github.com/toolhost/toolhost/transport"
)

var bgCtx = context.Background()

// PluginOptions configures how a Plugin is run by this process (the
// Manifest says what the plugin is and may do). The zero value is valid.
type PluginOptions struct {
	// Logger receives the plugin's logs: its stdout and stderr lines and its
	// log_* calls (bounded: see guestlog.go), and sandbox's own messages
	// about it. The host passes a logger already named for the plugin. Nil
	// means the Engine's logger named after the plugin.
	Logger hclog.Logger

	// LazyInstances: when Connect finds the plugin's tools in the
	// tool-list cache, the module is compiled and its first instance
	// created at the first operation that needs one (a call, a ping).
	// False (the default): they are prepared in the background as soon as
	// Connect returns, so that the first call does not wait for them. Set
	// it for a process that only lists tools (toolhost tools).
	LazyInstances bool

	// RefreshToolCache: Connect does not read the tool-list cache; it
	// compiles the module, warms an instance, and the first complete
	// ListTools rewrites the entry (toolhost prewarm).
	RefreshToolCache bool

	// Tools, when set, grants the plugin calls of the host's tools
	// through the host module toolhost:host/tools (code mode, issue 27);
	// see HostTools. Nil: the plugin's requests are answered
	// "not_granted".
	Tools *HostTools

	// ConfigTable is the configuration table the plugin's limits come
	// from, as operator messages name it ("raise timeout in TABLE"):
	// default "[plugins.NAME]"; code mode's runner gives "[code_mode]".
	ConfigTable string
}

// ABI identifies a plugin calling convention (see docs/PLUGIN-ABI.md).
type ABI string

const (
	// ABIv2 is hyper-mcp's "v2": exports list_tools and call_tool, and
	// optionally list_resources, list_resource_templates, read_resource,
	// list_prompts, get_prompt.
	ABIv2 ABI = "v2"
	// ABIv1 is the mcp.run servlet ABI: exports describe and call.
	ABIv1 ABI = "v1"
)

const (
	stateNew = iota
	stateConnecting
	stateReady
	stateFailed
	stateClosed
)

// Plugin is one WebAssembly plugin run in the sandbox, exposed as a
// transport.Transport. Build it with Engine.Plugin; see transport.Transport
// for the lifecycle and concurrency contract.
//
// Every operation is one call of a guest export on an instance from the
// plugin's pool, under a deadline: the caller's (the host gives every call
// one, see host.Host.CallTool) or, when ctx has none, Manifest.Timeout
// (default DefaultTimeout) from when the call gets an instance. The wazero runtime is built with
// close-on-context-done, so a guest still running at the deadline is
// stopped (its module closed) rather than left spinning, and the call
// returns an error wrapping transport.ErrTimeout and
// context.DeadlineExceeded. A call whose instance timed out, trapped, ran
// out of memory or was aborted by a host function discards that instance;
// the next call gets a new one.
type Plugin struct {
	e         *Engine
	m         Manifest
	name      string
	table     string // the configuration table messages name (PluginOptions.ConfigTable)
	logger    hclog.Logger
	glog      *guestLog
	timeout   time.Duration
	memPages  uint32
	maxInput  int64
	maxOutput int64
	maxHTTP   int64
	// maxHTTPRequests and maxHTTPBytes cap one call's http_requests.
	maxHTTPRequests int
	maxHTTPBytes    int64
	size            int
	fresh           bool

	httpPolicy *httpPolicy
	http       *http.Client
	mounts     []mount
	maxFiles   int64

	// tools is PluginOptions.Tools (nil: not granted).
	tools *HostTools

	// probe marks measureMemory's uncapped copy (its own allocator).
	probe bool

	// onConfigGet, when set (by Inspect), sees every config_get key.
	onConfigGet func(key string)

	// The tool-list cache (toolcache.go): lazy and refresh are
	// PluginOptions'; cacheKey is the entry ListTools writes after a live
	// listing ("" for none); stored is set once it did.
	lazy, refresh bool
	cacheKey      string
	stored        atomic.Bool

	closeCtx    context.Context
	closeCancel context.CancelFunc
	sem         chan struct{}
	callID      atomic.Uint64

	mu         sync.Mutex
	state      int
	ops        opCounter // Connect and calls in flight
	compiled   *compiledModule
	idle       []*instance
	engineHeld bool
	abi        ABI
	module     *wasmfile.Module
	digest     string
	caps       *mcp.ServerCapabilities
	// After a Connect from the tool-list cache: the module to compile at
	// first use (nil once compiled), the compile in progress (closed when
	// it ends), and the cached tools (a JSON array, checked).
	wasm        []byte
	compiling   chan struct{}
	cachedTools []byte
}

var (
	_ transport.Transport   = (*Plugin)(nil)
	_ transport.SizedCaller = (*Plugin)(nil)
)

func newPlugin(e *Engine, m *Manifest, opts *PluginOptions) *Plugin {
	if opts == nil {
		opts = &PluginOptions{}
	}
	p := &Plugin{e: e, m: *m, name: m.Name}
	p.logger = opts.Logger
	if p.logger == nil {
		p.logger = e.logger.Named(m.Name)
	}
	p.glog = &guestLog{logger: p.logger}
	p.lazy, p.refresh = opts.LazyInstances, opts.RefreshToolCache
	p.tools = opts.Tools
	p.table = opts.ConfigTable
	if p.table == "" {
		p.table = "[plugins." + m.Name + "]"
	}
	p.timeout = m.Timeout
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	p.memPages = m.pages()
	memBytes := int64(p.memPages) * PageSize
	p.maxInput = memBytes / 2
	p.maxHTTP = memBytes / 4
	p.maxHTTPRequests = m.MaxHTTPRequests
	if p.maxHTTPRequests <= 0 {
		p.maxHTTPRequests = DefaultMaxHTTPRequests
	}
	p.maxHTTPBytes = m.MaxHTTPBytes
	if p.maxHTTPBytes <= 0 {
		p.maxHTTPBytes = DefaultMaxHTTPBytes
	}
	p.maxOutput = m.MaxOutput
	if p.maxOutput <= 0 {
		p.maxOutput = DefaultMaxOutput
	}
	p.size = m.Instances
	if p.size <= 0 {
		p.size = DefaultInstances()
	}
	p.fresh = m.Isolation == IsolationFresh
	p.maxFiles = int64(m.MaxOpenFiles)
	if p.maxFiles <= 0 {
		p.maxFiles = DefaultMaxOpenFiles
	}
	p.sem = make(chan struct{}, p.size)
	p.closeCtx, p.closeCancel = context.WithCancel(bgCtx)
	return p
}

// Name returns the plugin's name (Manifest.Name).
func (p *Plugin) Name() string { return p.name }

// ABI returns the detected ABI ("" before Connect succeeded).
func (p *Plugin) ABI() ABI {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.abi
}

// Connect reads the module file, checks the sha256 pin, checks the ABI from
// the module's exports and its declared memory against the cap, compiles it
// (through the Engine's compilation cache), warms one instance by calling
// list_tools (v2) or describe (v1), and reports the plugin as an MCP server:
// serverInfo.name is the plugin name, serverInfo.version "sha256:" and the
// first 12 hex digits of the module digest; capabilities are tools, plus
// resources when the module exports list_resources and prompts when it
// exports list_prompts.
//
// Errors: a missing or unreadable file wraps transport.ErrStart; a pin
// mismatch ErrChecksum (and ErrStart); an unknown ABI or invalid module
// ErrABI (and transport.ErrInitialize); a memory cap below what the module
// needs to start ErrMemoryLimit (and ErrInitialize), saying the minimum; a
// warm-up call that fails wraps transport.ErrInitialize and the call's own
// sentinel. A failure that restarting cannot cure (a missing file, a pin
// mismatch, an unsupported ABI, a memory cap too small to start) also wraps
// transport.ErrPermanent, as a *transport.PermanentError.
func (p *Plugin) Connect(ctx context.Context) (*mcp.InitializeResult, error) {
	p.mu.Lock()
	switch p.state {
	case stateClosed:
		p.mu.Unlock()
		return nil, p.errorf("connect: %w", transport.ErrClosed)
	case stateNew:
	default:
		p.mu.Unlock()
		return nil, p.errorf("connect: Connect may be called only once; build a new Plugin to reconnect")
	}
	if err := p.e.acquire(); err != nil {
		p.mu.Unlock()
		return nil, err
	}
	p.engineHeld = true
	p.state = stateConnecting
	p.ops.Add(1)
	p.mu.Unlock()
	defer p.ops.Done()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(p.closeCtx, cancel)
	defer stop()

	res, err := p.connect(ctx)
	if err != nil {
		err = permanent(err)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil && p.state == stateClosed {
		err = p.errorf("connect: %w", transport.ErrClosed)
	}
	if err != nil {
		for _, in := range p.idle {
			in.close()
		}
		p.idle = nil
		if p.compiled != nil {
			_ = p.compiled.Close(bgCtx)
			p.compiled = nil
		}
		if p.engineHeld {
			p.engineHeld = false
			p.e.release()
		}
		if p.state != stateClosed {
			p.state = stateFailed
		}
		return nil, err
	}
	p.state = stateReady
	return res, nil
}

func (p *Plugin) errorf(format string, args ...any) error {
	return fmt.Errorf("sandbox: plugin %q: "+format, append([]any{p.name}, args...)...)
}

func (p *Plugin) connect(ctx context.Context) (*mcp.InitializeResult, error) {
	if err := p.m.Validate(); err != nil {
		return nil, p.errorf("%w: %w", err, transport.ErrStart)
	}
	b, err := os.ReadFile(p.m.Path)
	if err != nil {
		return nil, p.errorf("reading module: %w: %w (check path in %s)", err, transport.ErrStart, p.table)
	}
	sum := sha256.Sum256(b)
	digest := hex.EncodeToString(sum[:])
	if pin := strings.ToLower(strings.TrimSpace(p.m.SHA256)); pin != "" && pin != digest {
		return nil, p.errorf("%s has sha256 %s, the config pins %s: %w: %w; rebuild or re-download the plugin, or update sha256 if the new file is trusted", p.m.Path, digest, pin, ErrChecksum, transport.ErrStart)
	}
	mod, err := wasmfile.Parse(b)
	if err != nil {
		return nil, p.errorf("%s: %v: %w: %w", p.m.Path, err, ErrABI, transport.ErrInitialize)
	}
	abi, err := detectABI(mod)
	if err != nil {
		return nil, p.errorf("%s: %w: %w", p.m.Path, err, transport.ErrInitialize)
	}
	if mod.HasMemory && mod.MemMin > uint64(p.memPages) {
		return nil, p.errorf("memory cap %d pages (%s) is below the module's declared minimum of %d pages (%s, from its memory section); set memory >= %s: %w: %w",
			p.memPages, pagesSize(uint64(p.memPages)), mod.MemMin, pagesSize(mod.MemMin), pagesSize(mod.MemMin), ErrMemoryLimit, transport.ErrInitialize)
	}
	if len(p.m.Hosts) > 0 {
		pol, err := newHTTPPolicy(p.m.Hosts)
		if err != nil {
			return nil, p.errorf("%v: %w", err, transport.ErrStart)
		}
		p.httpPolicy, p.http = pol, newHTTPClient(pol)
	} else {
		p.httpPolicy = &httpPolicy{}
	}
	if len(p.m.Mounts) > 0 {
		ms, err := newMounts(p.m.Mounts)
		if err != nil {
			return nil, p.errorf("allowed_paths: %v (each mount must be an existing host directory): %w", err, transport.ErrStart)
		}
		p.mounts = ms
	}

	if p.e.tools != nil && p.onConfigGet == nil && !p.probe {
		key := p.m.toolCacheKey(digest, abi)
		if !p.refresh {
			if tools := p.e.tools.get(p, key, digest); tools != nil {
				return p.connectCached(b, abi, mod, digest, tools), nil
			}
		}
		p.cacheKey = key
	}
	wasm := b
	compiled, err := p.compile(ctx, wasm, p.memPages)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.compiled, p.abi, p.module, p.digest = compiled, abi, mod, digest
	p.mu.Unlock()

	// Warm one instance: runs the guest's _initialize and its list export.
	// This is a start step, like an MCP server's initialize, so it is
	// bounded by the caller's start deadline (the host's startup_timeout),
	// not by the per-call timeout: a first instantiation on a loaded machine
	// can legitimately take longer than a tight call timeout.
	wctx, cancel := warmContext(ctx, p.timeout)
	defer cancel()
	in, err := p.newInstance(wctx)
	if err == nil {
		_, err = p.listOnce(wctx, ctx, in, "")
		if err != nil && !in.broken {
			in.close()
		}
	}
	if err != nil && wctx.Err() == context.DeadlineExceeded && ctx.Err() != context.Canceled && !p.isClosed() {
		err = p.errorf("the first instance did not finish _initialize and %s within the start deadline: %w: %w; the guest was stopped; raise startup_timeout in %s if the plugin legitimately needs longer to start",
			p.listExport(), transport.ErrTimeout, context.DeadlineExceeded, p.table)
	}
	if err != nil {
		if in != nil && in.broken {
			in.close()
		}
		if errors.Is(err, ErrMemoryLimit) || errors.Is(err, ErrTrap) {
			if need, perr := p.measureMemory(ctx, wasm, abi); perr == nil && need > uint64(p.memPages) {
				return nil, p.errorf("memory cap %d pages (%s) is below what the module needs to start: with no cap it grew to %d pages (%s) while initializing and answering %s (measured by trying; its declared minimum is %d pages); set memory >= %s: %w: %w",
					p.memPages, pagesSize(uint64(p.memPages)), need, pagesSize(need), p.listExport(), mod.MemMin, pagesSize(need), ErrMemoryLimit, transport.ErrInitialize)
			}
		}
		return nil, fmt.Errorf("%w (while warming the first instance): %w", err, transport.ErrInitialize)
	}
	p.mu.Lock()
	if p.fresh {
		in.close()
	} else {
		p.idle = append(p.idle, in)
	}
	p.mu.Unlock()
	p.logger.Debug("plugin ready", "abi", abi, "sha256", digest, "memory_pages", p.memPages, "instances", p.size, "isolation", map[bool]string{true: "fresh", false: "pooled"}[p.fresh])
	return p.initResult(abi, mod, digest), nil
}

// initResult sets p's capabilities from the module's exports and returns
// the InitializeResult Connect reports.
func (p *Plugin) initResult(abi ABI, mod *wasmfile.Module, digest string) *mcp.InitializeResult {
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	if abi == ABIv2 {
		if _, ok := mod.Exports["list_resources"]; ok {
			caps.Resources = &mcp.ResourceCapabilities{}
		}
		if _, ok := mod.Exports["list_prompts"]; ok {
			caps.Prompts = &mcp.PromptCapabilities{}
		}
	}
	p.mu.Lock()
	p.caps = caps
	p.mu.Unlock()
	return &mcp.InitializeResult{
		ProtocolVersion: ProtocolVersion,
		Capabilities:    caps,
		ServerInfo:      &mcp.Implementation{Name: p.name, Version: "sha256:" + digest[:12]},
	}
}

// warmContext bounds the warm-up of a plugin's first instance: by ctx's own
// deadline when it has one (the host sets startup_timeout), else by the
// longer of DefaultStartTimeout and the per-call timeout.
func warmContext(ctx context.Context, callTimeout time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, max(DefaultStartTimeout, callTimeout))
}

func pagesSize(pages uint64) string {
	return units.Bytes(int64(pages) * PageSize)
}

func (p *Plugin) listExport() string {
	if p.abi == ABIv1 {
		return "describe"
	}
	return "list_tools"
}

// ctxError explains why ctx (the call's context, derived from parent) is
// done.
func (p *Plugin) ctxError(ctx, parent context.Context, op string) error {
	if p.isClosed() {
		return p.errorf("%s: %w", op, transport.ErrClosed)
	}
	if errors.Is(ctx.Err(), context.Canceled) || parent != nil && errors.Is(parent.Err(), context.Canceled) {
		return p.errorf("%s: call cancelled by the caller: %w", op, context.Canceled)
	}
	// The deadline is the caller's when it gave one (the host: it names
	// which of its deadlines passed); the plugin timeout otherwise.
	which := fmt.Sprintf("the call deadline (plugin timeout %v)", p.timeout)
	if parent != nil {
		if _, ok := parent.Deadline(); ok {
			which = "the deadline it was given"
		}
	}
	return p.errorf("%s: no answer within %s: %w: %w; the guest was stopped; raise timeout in %s if the tool legitimately needs longer",
		op, which, transport.ErrTimeout, context.DeadlineExceeded, p.table)
}

func (p *Plugin) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state == stateClosed
}

// Close closes the plugin: calls in flight are stopped (their guests are
// closed through their contexts) and fail with transport.ErrClosed; Close
// waits for them, then closes every instance, the compiled module and the
// HTTP client's idle connections. Idempotent; safe from any goroutine.
func (p *Plugin) Close() error {
	p.mu.Lock()
	if p.state == stateClosed {
		p.mu.Unlock()
		return nil
	}
	p.state = stateClosed
	p.mu.Unlock()
	p.closeCancel()
	p.ops.Wait()

	p.mu.Lock()
	idle, compiled, held := p.idle, p.compiled, p.engineHeld
	p.idle, p.compiled, p.engineHeld = nil, nil, false
	p.mu.Unlock()
	for _, in := range idle {
		in.close()
	}
	var err error
	if compiled != nil {
		err = compiled.Close(bgCtx)
	}
	if p.http != nil {
		p.http.CloseIdleConnections()
	}
	if held {
		p.e.release()
	}
	return err
}

// opCounter is a WaitGroup whose count can be read (tests).
type opCounter struct {
	wg sync.WaitGroup
	n  atomic.Int64
}

func (c *opCounter) Add(d int)   { c.n.Add(int64(d)); c.wg.Add(d) }
func (c *opCounter) Done()       { c.n.Add(-1); c.wg.Done() }
func (c *opCounter) Wait()       { c.wg.Wait() }
func (c *opCounter) Load() int64 { return c.n.Load() }
