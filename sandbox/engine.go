package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/toolhost/toolhost/transport"
)

// EngineOptions configures an Engine. The zero value is valid.
type EngineOptions struct {
	// CacheDir is the directory of the on-disk wazero compilation cache
	// shared by every plugin of the Engine ([host] cache_dir). "" means
	// toolhost/wasm under os.UserCacheDir (os.TempDir when the user has no
	// cache dir). It is created (mode 0700) if missing. A warm cache turns
	// a ≈1 s compile of a 3 MB Go plugin into ≈30-100 ms (wazero decodes and
	// validates the whole module before it looks in the cache). The
	// tool-list cache lives in its subdirectory ToolCacheDir.
	CacheDir string

	// Logger receives the Engine's and, unless PluginOptions.Logger is set,
	// every plugin's logs (as a sub-logger named after the plugin). Nil means
	// a null logger.
	Logger hclog.Logger

	// NoToolCache turns the tool-list cache off: every Connect compiles
	// its module and lists its tools on a warm instance. By default the
	// tools of every plugin listed once are kept in CacheDir/ToolCacheDir
	// (see ToolCacheDir), and a later Connect of the same module with the
	// same configuration uses them without compiling.
	NoToolCache bool
}

// Engine compiles and runs WebAssembly plugins. One Engine per process is
// enough: it owns the compilation cache the plugins share.
//
// An Engine is safe for concurrent use; Plugins built from it may Connect
// concurrently.
type Engine struct {
	cache    wazero.CompilationCache
	cacheDir string
	logger   hclog.Logger
	tools    *toolCache // nil: no tool-list cache

	mu          sync.Mutex
	open        int // plugins connecting or connected, not yet closed
	closed      bool
	cacheClosed bool

	// compiling serialises the compilation of each module (by its
	// SHA-256) across the runtimes that share cache. wazero v1.12.0's
	// engine, loading a module from its file cache, makes it visible to
	// those runtimes before it has built the module's entry preambles
	// (internal/engine/wazevo/engine_cache.go, getCompiledModule): another
	// runtime compiling the same module in that window gets it half built,
	// and its first call reads the preambles as they are written (a data
	// race -race found in TestWarmUpDeadline; a nil preamble table at
	// worst, and an index panic). Two plugins of one module file (with
	// other configurations, say) start at once whenever the host does.
	compileMu sync.Mutex
	compiling map[[32]byte]*moduleLock
}

// moduleLock is the lock of one module's compilation.
type moduleLock struct {
	mu   sync.Mutex
	refs int // holders and waiters, under Engine.compileMu
}

// lockModule waits until no other compilation of the module whose SHA-256
// is sum is under way in e; unlock ends this one's. The wait, like the
// compilation it waits for (wazero's CompileModule), does not end with a
// context: a compilation always ends.
func (e *Engine) lockModule(sum [32]byte) (unlock func()) {
	e.compileMu.Lock()
	if e.compiling == nil {
		e.compiling = map[[32]byte]*moduleLock{}
	}
	l := e.compiling[sum]
	if l == nil {
		l = &moduleLock{}
		e.compiling[sum] = l
	}
	l.refs++
	e.compileMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		e.compileMu.Lock()
		if l.refs--; l.refs == 0 {
			delete(e.compiling, sum)
		}
		e.compileMu.Unlock()
	}
}

// NewEngine creates an Engine and opens (creating if needed) its compilation
// cache directory. It fails when the directory cannot be created.
func NewEngine(opts *EngineOptions) (*Engine, error) {
	if opts == nil {
		opts = &EngineOptions{}
	}
	dir := opts.CacheDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "toolhost", "wasm")
	}
	// Compiled native code is loaded from here and run: only its owner may
	// write it (a directory that already exists keeps its mode).
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: creating compilation cache dir: %w (set [host] cache_dir to a writable directory)", err)
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: opening compilation cache %s: %w (set [host] cache_dir to a writable directory)", dir, err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	e := &Engine{cache: cache, cacheDir: dir, logger: logger}
	if !opts.NoToolCache {
		e.tools = openToolCache(dir, logger)
	}
	return e, nil
}

// CacheDir returns the compilation cache directory in use.
func (e *Engine) CacheDir() string { return e.cacheDir }

// Plugin returns an unconnected Plugin for m. Nothing is read or checked
// until Connect, which fails on a Manifest out of range (ErrManifest, see
// Manifest.Validate). The Plugin keeps a copy of m; opts may be nil.
func (e *Engine) Plugin(m *Manifest, opts *PluginOptions) *Plugin {
	return newPlugin(e, m, opts)
}

// acquire registers a connecting plugin; it fails once Close was called.
func (e *Engine) acquire() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("sandbox: engine closed: %w", transport.ErrClosed)
	}
	e.open++
	return nil
}

// release unregisters a plugin; the last one out closes the cache if the
// Engine was closed meanwhile.
func (e *Engine) release() {
	e.mu.Lock()
	e.open--
	closeNow := e.closed && e.open == 0 && !e.cacheClosed
	if closeNow {
		e.cacheClosed = true
	}
	e.mu.Unlock()
	if closeNow {
		_ = e.cache.Close(bgCtx)
	}
}

// Close closes the Engine. New Connects fail with transport.ErrClosed.
// Closing wazero's shared compilation cache while a compiled plugin still
// uses it breaks that plugin, so the cache is closed when the last open
// Plugin of this Engine closes (immediately if there is none): Close is safe
// to call in any order with the Plugins' Close. It is idempotent.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	closeNow := e.open == 0 && !e.cacheClosed
	if closeNow {
		e.cacheClosed = true
	}
	e.mu.Unlock()
	if closeNow {
		return e.cache.Close(bgCtx)
	}
	return nil
}
