package sandbox

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	extism "github.com/extism/go-sdk"
	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/wasmfile"
	"github.com/toolhost/toolhost/transport"
)

var bgCtx = context.Background()

// Defaults for a [plugins.NAME] table's unset limits.
const (
	// DefaultMemory caps a plugin's linear memory when memory is unset:
	// 256 MiB (4096 pages), room for a Go plugin (≈3.2 MiB to start) to parse
	// and build sizeable documents, while N instances of a runaway plugin
	// stay bounded at N × 256 MiB. The same cap applies to the instance's
	// Extism kernel memory (wazero's limit is per runtime).
	DefaultMemory = 256 << 20

	// DefaultMaxOutput caps one result (max_output unset): 4 MiB.
	DefaultMaxOutput = 4 << 20

	// DefaultMaxOpenFiles caps the files one instance may hold open in its
	// mounts (max_open_files unset): 128. The host-wide worst case is the
	// sum over plugins of max_open_files × instances.
	DefaultMaxOpenFiles = 128

	// DefaultMaxHTTPRequests caps one call's http_request calls
	// (max_http_requests unset): 64.
	DefaultMaxHTTPRequests = 64

	// DefaultMaxHTTPBytes caps the response bodies one call reads through
	// http_request, in all (max_http_bytes unset): 64 MiB. One body is
	// also capped at a quarter of the memory cap.
	DefaultMaxHTTPBytes = 64 << 20

	// PageSize is the WebAssembly page size: memory caps are rounded up to
	// whole pages.
	PageSize = 65536

	// ProtocolVersion is the MCP revision a plugin's InitializeResult
	// reports: plugins speak MCP result shapes, not the handshake.
	ProtocolVersion = "2025-11-25"
)

// DefaultInstances is the pool size when instances is unset:
// runtime.NumCPU(). Instances are created lazily — one is warmed by Connect,
// more only while calls overlap — so an idle or sequential plugin costs one
// instance (≈4 MiB RSS for a Go plugin), while concurrent calls (an agent's
// parallel tool calls, a tool waiting on HTTP) are not queued behind one
// another. A plugin whose tools rely on sharing global state across calls
// should set instances = 1.
func DefaultInstances() int { return runtime.NumCPU() }

// PluginOptions configures a Plugin. The zero value is valid.
type PluginOptions struct {
	// DefaultTimeout is the per-call deadline when the plugin's own timeout
	// is unset ([host] call_timeout). Zero means config.DefaultCallTimeout.
	DefaultTimeout time.Duration

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
// one, see host.Host.CallTool) or, when ctx has none, the plugin's timeout
// (else PluginOptions.DefaultTimeout, else config.DefaultCallTimeout) from
// when the call gets an instance. The wazero runtime is built with
// close-on-context-done, so a guest still running at the deadline is
// stopped (its module closed) rather than left spinning, and the call
// returns an error wrapping transport.ErrTimeout and
// context.DeadlineExceeded. A call whose instance timed out, trapped, ran
// out of memory or was aborted by a host function discards that instance;
// the next call gets a new one.
type Plugin struct {
	e         *Engine
	cfg       config.Plugin
	name      string
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
	compiled   *extism.CompiledPlugin
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

func newPlugin(e *Engine, cfg *config.Plugin, opts *PluginOptions) *Plugin {
	if opts == nil {
		opts = &PluginOptions{}
	}
	p := &Plugin{e: e, cfg: *cfg, name: cfg.Name}
	p.logger = opts.Logger
	if p.logger == nil {
		p.logger = e.logger.Named(cfg.Name)
	}
	p.glog = &guestLog{logger: p.logger}
	p.lazy, p.refresh = opts.LazyInstances, opts.RefreshToolCache
	switch {
	case cfg.Timeout > 0:
		p.timeout = cfg.Timeout.Std()
	case opts.DefaultTimeout > 0:
		p.timeout = opts.DefaultTimeout
	default:
		p.timeout = config.DefaultCallTimeout
	}
	mem := int64(cfg.Memory)
	if mem <= 0 {
		mem = DefaultMemory
	}
	pages := (mem + PageSize - 1) / PageSize
	if pages > 65536 {
		pages = 65536
	}
	p.memPages = uint32(pages)
	memBytes := pages * PageSize
	p.maxInput = memBytes / 2
	p.maxHTTP = memBytes / 4
	p.maxHTTPRequests = cfg.MaxHTTPRequests
	if p.maxHTTPRequests <= 0 {
		p.maxHTTPRequests = DefaultMaxHTTPRequests
	}
	p.maxHTTPBytes = int64(cfg.MaxHTTPBytes)
	if p.maxHTTPBytes <= 0 {
		p.maxHTTPBytes = DefaultMaxHTTPBytes
	}
	p.maxOutput = int64(cfg.MaxOutput)
	if p.maxOutput <= 0 {
		p.maxOutput = DefaultMaxOutput
	}
	p.size = cfg.Instances
	if p.size <= 0 {
		p.size = DefaultInstances()
	}
	p.fresh = cfg.Isolation == "fresh"
	p.maxFiles = int64(cfg.MaxOpenFiles)
	if p.maxFiles <= 0 {
		p.maxFiles = DefaultMaxOpenFiles
	}
	p.sem = make(chan struct{}, p.size)
	p.closeCtx, p.closeCancel = context.WithCancel(bgCtx)
	return p
}

// Name returns the plugin's name from its config table.
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
	if _, ok := os.LookupEnv("EXTISM_ENABLE_WASI_OUTPUT"); ok {
		return nil, p.errorf("EXTISM_ENABLE_WASI_OUTPUT is set: the Extism go-sdk would then write guest output to the process's stdout, which must carry only protocol; unset it: %w", transport.ErrStart)
	}
	b, err := os.ReadFile(p.cfg.Path)
	if err != nil {
		return nil, p.errorf("reading module: %w: %w (check path in [plugins.%s])", err, transport.ErrStart, p.name)
	}
	sum := sha256.Sum256(b)
	digest := hex.EncodeToString(sum[:])
	if pin := strings.ToLower(strings.TrimSpace(p.cfg.SHA256)); pin != "" && pin != digest {
		return nil, p.errorf("%s has sha256 %s, the config pins %s: %w: %w; rebuild or re-download the plugin, or update sha256 if the new file is trusted", p.cfg.Path, digest, pin, ErrChecksum, transport.ErrStart)
	}
	mod, err := wasmfile.Parse(b)
	if err != nil {
		return nil, p.errorf("%s: %v: %w: %w", p.cfg.Path, err, ErrABI, transport.ErrInitialize)
	}
	abi, err := detectABI(mod)
	if err != nil {
		return nil, p.errorf("%s: %w: %w", p.cfg.Path, err, transport.ErrInitialize)
	}
	if mod.HasMemory && mod.MemMin > uint64(p.memPages) {
		return nil, p.errorf("memory cap %d pages (%s) is below the module's declared minimum of %d pages (%s, from its memory section); set memory >= %s: %w: %w",
			p.memPages, pagesSize(uint64(p.memPages)), mod.MemMin, pagesSize(mod.MemMin), pagesSize(mod.MemMin), ErrMemoryLimit, transport.ErrInitialize)
	}
	if len(p.cfg.AllowedHosts) > 0 {
		pol, err := newHTTPPolicy(p.cfg.AllowedHosts)
		if err != nil {
			return nil, p.errorf("%v: %w", err, transport.ErrStart)
		}
		p.httpPolicy, p.http = pol, newHTTPClient(pol)
	} else {
		p.httpPolicy = &httpPolicy{}
	}
	if len(p.cfg.Mounts) > 0 {
		ms, err := newMounts(p.cfg.Mounts)
		if err != nil {
			return nil, p.errorf("allowed_paths: %v (each mount must be an existing host directory): %w", err, transport.ErrStart)
		}
		p.mounts = ms
	}

	if p.e.tools != nil && p.onConfigGet == nil && !p.probe {
		key := p.toolCacheKey(digest, abi)
		if !p.refresh {
			if tools := p.e.tools.get(p, key, digest); tools != nil {
				return p.connectCached(b, abi, mod, digest, tools), nil
			}
		}
		p.cacheKey = key
	}
	wasm := wasmfile.RewriteImports(b, mod, "extism:host/env", envModule)
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
		err = p.errorf("the first instance did not finish _initialize and %s within the start deadline: %w: %w; the guest was stopped; raise startup_timeout in [plugins.%s] if the plugin legitimately needs longer to start",
			p.listExport(), transport.ErrTimeout, context.DeadlineExceeded, p.name)
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
// longer of config.DefaultStartupTimeout and the per-call timeout.
func warmContext(ctx context.Context, callTimeout time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, max(config.DefaultStartupTimeout, callTimeout))
}

func pagesSize(pages uint64) string {
	return config.Size(pages * PageSize).String()
}

func (p *Plugin) compile(ctx context.Context, wasm []byte, pages uint32) (*extism.CompiledPlugin, error) {
	rc := wazero.NewRuntimeConfig().
		WithCompilationCache(p.e.cache).
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(pages)
	manifest := extism.Manifest{
		Wasm: []extism.Wasm{extism.WasmData{Data: wasm, Name: "main"}},
		Memory: &extism.ManifestMemory{
			MaxPages:             pages,
			MaxHttpResponseBytes: p.maxHTTP,
			MaxVarBytes:          maxVarBytes,
		},
	}
	compiled, err := extism.NewCompiledPlugin(ctx, manifest, extism.PluginConfig{RuntimeConfig: rc, EnableWasi: true}, nil)
	if err != nil {
		return nil, p.errorf("compiling %s: %v (the module is invalid or imports functions the sandbox does not provide: only wasi_snapshot_preview1 and extism:host/env): %w: %w", p.cfg.Path, err, ErrABI, transport.ErrInitialize)
	}
	// The kernel host module goes into the plugin's own runtime, before any
	// instance imports it (instantiation resolves the imports).
	rt, err := unexported[wazero.Runtime](reflect.ValueOf(compiled).Elem(), "runtime")
	if err == nil {
		_, err = hostModule(rt).Instantiate(ctx)
	}
	if err != nil {
		_ = compiled.Close(bgCtx)
		return nil, p.errorf("building the kernel host module: %v: %w", err, transport.ErrInitialize)
	}
	return compiled, nil
}

// measureMemory finds, by trying, how many pages the module grows to while
// initializing and answering its list export with no memory cap (wazero's
// experimental memory allocator hook records the largest linear memory).
func (p *Plugin) measureMemory(ctx context.Context, wasm []byte, abi ABI) (uint64, error) {
	cfg := p.cfg
	cfg.Memory = config.Size(65536 * PageSize)
	probe := newPlugin(p.e, &cfg, &PluginOptions{Logger: hclog.NewNullLogger(), DefaultTimeout: p.timeout})
	defer probe.closeCancel()
	probe.mounts, probe.httpPolicy, probe.abi, probe.probe = p.mounts, &httpPolicy{}, abi, true
	compiled, err := probe.compile(ctx, wasm, 65536)
	if err != nil {
		return 0, err
	}
	defer compiled.Close(bgCtx)
	probe.compiled = compiled
	var peak atomic.Uint64
	tctx, cancel := context.WithTimeout(withPeakAllocator(ctx, &peak), p.timeout)
	defer cancel()
	in, err := probe.newInstance(tctx)
	if err != nil {
		return 0, err
	}
	defer in.close()
	if _, err := probe.listOnce(tctx, ctx, in, ""); err != nil {
		return 0, err
	}
	return (peak.Load() + PageSize - 1) / PageSize, nil
}

// detectABI chooses the ABI from the module's exports.
func detectABI(m *wasmfile.Module) (ABI, error) {
	has := func(n string) bool { _, ok := m.Exports[n]; return ok }
	var abi ABI
	var required, optional []string
	switch {
	case has("describe") && has("call"):
		abi, required = ABIv1, []string{"describe", "call"}
	case has("list_tools") && has("call_tool"):
		abi, required = ABIv2, []string{"list_tools", "call_tool"}
		optional = []string{"list_resources", "list_resource_templates", "read_resource", "list_prompts", "get_prompt", "complete"}
	default:
		names := make([]string, 0, len(m.Exports))
		for n := range m.Exports {
			names = append(names, n)
		}
		sort.Strings(names)
		return "", fmt.Errorf("%w: the module exports functions %v; a plugin must export list_tools and call_tool (hyper-mcp v2) or describe and call (mcp.run v1), see docs/PLUGIN-ABI.md", ErrABI, names)
	}
	for _, n := range append(required, optional...) {
		t, ok := m.Exports[n]
		if !ok {
			continue
		}
		if len(t.Params) != 0 || len(t.Results) > 1 || len(t.Results) == 1 && t.Results[0] != wasmfile.ValI32 {
			return "", fmt.Errorf("%w: export %q has signature %v, want () -> (i32)", ErrABI, n, t)
		}
	}
	return abi, nil
}

func (p *Plugin) listExport() string {
	if p.abi == ABIv1 {
		return "describe"
	}
	return "list_tools"
}

// instance is one instantiation of the module with its Go Extism kernel.
// It runs one call at a time; all its fields are used by that call's
// goroutine only.
type instance struct {
	p      *Plugin
	ext    *extism.Plugin
	stdout *lineWriter
	stderr *lineWriter

	// mod is the guest module and fns its exports, looked up once each.
	mod api.Module
	fns map[string]api.Function
	k   *kernel

	lim     *instLimits
	export  string // the export being called
	tooBig  int64  // size of an output or call_tool error over max_output
	callCtx context.Context
	fault   error
	errMsg  string
	broken  bool

	vars        map[string][]byte
	varBytes    int
	httpStatus  int32
	httpHeaders map[string]string
	httpCount   int   // http_requests of the current call
	httpBytes   int64 // response body bytes of the current call
}

func (p *Plugin) newInstance(ctx context.Context) (*instance, error) {
	in := &instance{p: p}
	in.stdout = &lineWriter{log: p.glog, stream: "stdout", level: hclog.Info}
	in.stderr = &lineWriter{log: p.glog, stream: "stderr", level: hclog.Info, keep: true}
	mc := wazero.NewModuleConfig().
		WithStdout(in.stdout).
		WithStderr(in.stderr).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(in.sleep).
		WithRandSource(crand.Reader)
	in.lim = &instLimits{maxFiles: p.maxFiles}
	if len(p.mounts) > 0 {
		mc = mc.WithFSConfig(fsConfig(p.mounts, in.lim))
	}
	compiled, err := p.compiledPlugin(ctx)
	if err != nil {
		return nil, err
	}
	ictx := ctx
	if !p.probe {
		ictx = withReservedMemory(ctx)
	}
	ext, err := compiled.Instance(ictx, extism.PluginInstanceConfig{ModuleConfig: mc})
	if err != nil {
		if ctx.Err() != nil {
			return nil, p.ctxError(ctx, nil, "instantiate")
		}
		return nil, p.errorf("instantiating: %v: %w", err, transport.ErrInitialize)
	}
	in.ext = ext
	in.k = newKernel(uint64(p.memPages) * PageSize)
	in.fns = make(map[string]api.Function, 4)
	mod, err := guestModule(ext)
	if err == nil {
		in.mod = mod
		err = in.initialize(ctx)
	}
	if err != nil {
		in.close()
		return nil, err
	}
	return in, nil
}

// guestModule returns the go-sdk plugin's main module instance.
func guestModule(ext *extism.Plugin) (api.Module, error) {
	m, err := unexported[api.Module](reflect.ValueOf(ext).Elem(), "mainModule")
	if err == nil && m == nil {
		err = errors.New("the go-sdk plugin has no main module")
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: %v: %w", err, transport.ErrInitialize)
	}
	return m, nil
}

// unexported reads field name of the go-sdk struct v. The go-sdk (v1.7.1,
// pinned in go.mod) keeps the wazero runtime of a CompiledPlugin and the
// guest module of a Plugin in unexported fields and offers no accessor;
// reaching them is what lets a call be one Go→Wasm entry into the guest's
// export with a kernel in Go (see docs/RATIONALE.md). A go-sdk without the
// fields fails every Connect with this error (and TestGuestModule).
func unexported[T any](v reflect.Value, name string) (T, error) {
	var zero T
	f := v.FieldByName(name)
	if !f.IsValid() || f.Type() != reflect.TypeFor[T]() {
		return zero, fmt.Errorf("the Extism go-sdk has no field %s of type %v (go-sdk version changed?)", name, reflect.TypeFor[T]())
	}
	t, _ := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(T)
	return t, nil
}

// initialize runs the guest runtime's initialisation once, as the go-sdk
// does before an instance's first call (runtime.go): a WASI reactor's
// _initialize, then hs_init(0, 0) for a Haskell module, or a command's
// __wasm_call_ctors when there is no _initialize.
func (in *instance) initialize(ctx context.Context) error {
	var steps [][]uint64
	var names []string
	if in.mod.ExportedFunction("_initialize") != nil {
		names, steps = append(names, "_initialize"), append(steps, nil)
	} else if in.mod.ExportedFunction("__wasm_call_ctors") != nil && in.mod.ExportedFunction("hs_init") == nil {
		names, steps = append(names, "__wasm_call_ctors"), append(steps, nil)
	}
	if in.mod.ExportedFunction("hs_init") != nil {
		names, steps = append(names, "hs_init"), append(steps, []uint64{0, 0})
	}
	for i, name := range names {
		in.k.reset()
		in.callCtx = ctx
		_, err := in.enter(ctx, name, steps[i])
		in.callCtx = nil
		if err != nil {
			return in.classify(ctx, nil, name, err)
		}
	}
	return nil
}

// enter calls export name of the guest: the one Go→Wasm entry of a call.
// Its deadline is enforced by wazero's close-on-context-done (the runtime
// is built with it), which watches ctx for the length of the entry.
func (in *instance) enter(ctx context.Context, name string, params []uint64) (uint64, error) {
	f := in.fns[name]
	if f == nil {
		f = in.mod.ExportedFunction(name)
		if f == nil {
			return 0, fmt.Errorf("unknown function: %s", name)
		}
		if n := len(f.Definition().ResultTypes()); n > 1 {
			return 0, fmt.Errorf("function %s has %d results, expected 0 or 1", name, n)
		}
		in.fns[name] = f
	}
	var st [2]uint64
	copy(st[:], params)
	cc := &callCtx{Context: ctx, in: in}
	err := f.CallWithStack(cc, st[:])
	rc := st[0]
	if len(f.Definition().ResultTypes()) == 0 {
		rc = 0
	}
	// A guest that exits (WASI proc_exit) ends the call: exit code 0 is a
	// success, as in the go-sdk.
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		rc = uint64(exit.ExitCode())
		if exit.ExitCode() == 0 && ctx.Err() == nil {
			err = nil
		}
	}
	return rc, err
}

// sleep is the guest's nanosleep (WASI poll_oneoff on a clock): a real
// sleep, cut short when the call's context is done so a sleeping guest does
// not outlive its deadline.
func (in *instance) sleep(ns int64) {
	if ns <= 0 || in.callCtx == nil {
		return
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-in.callCtx.Done():
	}
}

func (in *instance) close() {
	if in.ext != nil {
		_ = in.ext.Close(bgCtx)
	}
	if in.k != nil {
		in.k.release()
	}
}

// call runs export fn with input on the instance and classifies the
// outcome. ctx carries the call's deadline; parent is the caller's context.
// The output is a view of the instance's kernel memory, valid until the
// instance's next call: use it before releasing the instance.
func (in *instance) call(ctx, parent context.Context, fn string, input []byte) ([]byte, error) {
	p := in.p
	in.callCtx = ctx
	in.fault, in.errMsg = nil, ""
	in.stderr.reset()
	in.lim.take()
	in.export, in.tooBig, in.httpCount, in.httpBytes = fn, 0, 0, 0
	var rc uint64
	var err error
	if in.mod.IsClosed() {
		err = errors.New("module is closed")
	} else if !in.k.setInput(input) {
		// maxInput is half the cap: only a kernel memory that cannot be
		// reserved gets here.
		in.broken = true
		in.callCtx = nil
		return nil, p.errorf("%s: request of %d bytes does not fit in the Extism kernel memory (cap %s): %w", fn, len(input), pagesSize(uint64(p.memPages)), ErrMemoryLimit)
	} else {
		rc, err = in.enter(ctx, fn, nil)
		// A guest that exited (proc_exit) closed its module: even a
		// successful call leaves the instance unusable.
		in.broken = in.broken || in.mod.IsClosed()
	}
	in.callCtx = nil
	if in.tooBig > 0 && ctx.Err() == nil && in.fault == nil {
		return nil, p.errorf("%s: result of %d bytes exceeds max_output (%d bytes): %w; raise max_output for [plugins.%s] or ask for less", fn, in.tooBig, p.maxOutput, transport.ErrOutputTooLarge, p.name)
	}
	if lerr := in.lim.take(); lerr != nil && ctx.Err() == nil {
		in.broken = true
		return nil, p.errorf("%s: %w; the instance was discarded; raise the limit in [plugins.%s] if the tool legitimately needs more", fn, lerr, p.name)
	}
	if err != nil {
		return nil, in.classify(ctx, parent, fn, err)
	}
	if in.errMsg != "" {
		return nil, &guestError{plugin: p.name, export: fn, msg: in.errMsg, rc: int32(rc)}
	}
	if rc != 0 {
		return nil, p.errorf("%s returned %d without setting an error (error_set): %w", fn, int32(rc), ErrGuest)
	}
	out, _ := in.k.bytes(in.k.out, in.k.outLen)
	if int64(len(out)) > p.maxOutput {
		return nil, p.errorf("%s: result of %d bytes exceeds max_output (%d bytes): %w; raise max_output for [plugins.%s] or ask for less", fn, len(out), p.maxOutput, transport.ErrOutputTooLarge, p.name)
	}
	return out, nil
}

// classify maps the error of a guest entry that failed to the call's error
// and marks the instance broken.
func (in *instance) classify(ctx, parent context.Context, fn string, err error) error {
	p := in.p
	in.broken = true
	switch {
	case ctx.Err() != nil:
		return p.ctxError(ctx, parent, fn)
	case in.fault != nil:
		return p.errorf("%s: %w", fn, in.fault)
	}
	if p.isClosed() {
		return p.errorf("%s: %w", fn, transport.ErrClosed)
	}
	tail := in.stderr.lines()
	if outOfMemory(tail) {
		return p.errorf("%s: the guest ran out of memory under its cap of %d pages (%s) (%s); raise memory if the tool legitimately needs more: %w",
			fn, p.memPages, pagesSize(uint64(p.memPages)), firstNonEmpty(panicLine(tail), err.Error()), ErrMemoryLimit)
	}
	msg := panicLine(tail)
	if msg == "" {
		msg = firstLine(err.Error())
	}
	return p.errorf("%s: %s: %w; the instance was discarded", fn, msg, ErrTrap)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// guestError is a failure the guest reported with error_set.
type guestError struct {
	plugin, export, msg string
	rc                  int32
}

func (e *guestError) Error() string {
	return fmt.Sprintf("sandbox: plugin %q: %s failed: %s", e.plugin, e.export, e.msg)
}
func (e *guestError) Unwrap() error { return ErrGuest }

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
	return p.errorf("%s: no answer within %s: %w: %w; the guest was stopped; raise timeout in [plugins.%s] if the tool legitimately needs longer",
		op, which, transport.ErrTimeout, context.DeadlineExceeded, p.name)
}

func (p *Plugin) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state == stateClosed
}

// invoke runs one guest export with the enforced deadline on a pooled (or
// fresh) instance, and hands its output to use before the instance goes
// back to the pool: out is a view of the instance's kernel memory, valid
// only during use. It returns the call's error, else use's.
func (p *Plugin) invoke(parent context.Context, fn string, input []byte, use func(out []byte) error) error {
	p.mu.Lock()
	switch p.state {
	case stateReady:
	case stateClosed:
		p.mu.Unlock()
		return p.errorf("%s: %w", fn, transport.ErrClosed)
	default:
		p.mu.Unlock()
		return p.errorf("%s: %w", fn, transport.ErrNotConnected)
	}
	p.ops.Add(1)
	p.mu.Unlock()
	defer p.ops.Done()

	if int64(len(input)) > p.maxInput {
		return p.errorf("%s: request of %d bytes exceeds the input limit of %d bytes (half the memory cap of %s; the Extism kernel would silently drop it): %w",
			fn, len(input), p.maxInput, pagesSize(uint64(p.memPages)), ErrInputTooLarge)
	}
	// Waiting for a free instance is bounded by the caller's deadline and
	// by Close (every running call is bounded by its timeout, so the queue
	// drains); the plugin timeout starts once the call has an instance slot.
	if err := p.wait(parent, parent, fn); err != nil {
		return err
	}
	// The caller's deadline, when it has one, is the call's (the host sets
	// one per call); else the plugin timeout, from here.
	var ctx context.Context
	var cancel context.CancelFunc
	if _, ok := parent.Deadline(); ok {
		ctx, cancel = context.WithCancel(parent) // for Close, below
	} else {
		ctx, cancel = context.WithTimeout(parent, p.timeout)
	}
	defer cancel()
	stop := context.AfterFunc(p.closeCtx, cancel)
	defer stop()

	in, err := p.acquire(ctx, parent, fn)
	if err != nil {
		return err
	}
	out, err := in.call(ctx, parent, fn, input)
	if err == nil {
		err = use(out)
	}
	p.release(in)
	return err
}

// wait takes an instance slot (p.sem), waiting at most until ctx is done.
func (p *Plugin) wait(ctx, parent context.Context, fn string) error {
	select {
	case p.sem <- struct{}{}:
		return nil
	default:
	}
	select {
	case p.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
	case <-p.closeCtx.Done():
	}
	switch {
	case p.isClosed():
		return p.errorf("%s: %w", fn, transport.ErrClosed)
	case errors.Is(parent.Err(), context.Canceled):
		return p.errorf("%s: call cancelled by the caller while waiting for a free instance: %w", fn, context.Canceled)
	}
	return p.errorf("%s: all %d instances stayed busy until the caller's deadline: %w: %w; raise instances in [plugins.%s] or the caller's deadline",
		fn, p.size, ErrBusy, context.DeadlineExceeded, p.name)
}

// acquire returns an instance for a call that holds a slot (p.sem); on
// error it gives the slot back.
func (p *Plugin) acquire(ctx, parent context.Context, fn string) (*instance, error) {
	if !p.fresh {
		p.mu.Lock()
		if n := len(p.idle); n > 0 {
			in := p.idle[n-1]
			p.idle = p.idle[:n-1]
			p.mu.Unlock()
			return in, nil
		}
		p.mu.Unlock()
	}
	in, err := p.newInstance(ctx)
	if err != nil {
		<-p.sem
		return nil, err
	}
	return in, nil
}

func (p *Plugin) release(in *instance) {
	keep := !p.fresh && !in.broken
	if keep {
		p.mu.Lock()
		if p.state == stateClosed {
			keep = false
		} else {
			p.idle = append(p.idle, in)
		}
		p.mu.Unlock()
	}
	if !keep {
		in.close()
		if in.broken {
			p.logger.Debug("instance discarded")
		}
	}
	<-p.sem
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
