package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/internal/wasmfile"
	"github.com/toolhost/toolhost/transport"
)

// InspectOptions configures Inspect. The zero value is valid.
type InspectOptions struct {
	// Engine compiles the module; nil means a temporary Engine on the default
	// compilation cache directory, closed before Inspect returns.
	Engine *Engine
	// Timeout bounds each guest call; 0 means DefaultTimeout.
	Timeout time.Duration
	// Memory caps the module's memory, in bytes; 0 means DefaultMemory.
	Memory int64
}

// Import is one function or memory a module imports.
// Report.Imports lists each (module, name, signature) once, in the order of
// first import.
type Import struct {
	Module    string `json:"module"`
	Name      string `json:"name"`
	Signature string `json:"signature,omitempty"` // "(i64) -> (i64)" for functions
}

// Needs summarizes, from a module's imports, which capabilities it can use
// (an import is a possibility, not a proof of use).
type Needs struct {
	HTTP    bool `json:"http"`    // imports extism:host/env http_request: grant allowed_hosts
	Config  bool `json:"config"`  // imports extism:host/env config_get: see ConfigKeys
	Files   bool `json:"files"`   // imports WASI path_* functions: grant allowed_paths
	Vars    bool `json:"vars"`    // imports var_get/var_set (per-instance state)
	Logging bool `json:"logging"` // imports log_* functions
	// Tools: imports toolhost:host/tools (call, search: the catalogue's
	// tools from inside the plugin), which only a plugin given
	// PluginOptions.Tools can use — code mode's runner; any other gets
	// not_granted from every call.
	Tools bool `json:"tools"`
}

// Report is what Inspect learned about a module.
type Report struct {
	Path    string   `json:"path"`
	SHA256  string   `json:"sha256"`
	Size    int64    `json:"size"`
	ABI     ABI      `json:"abi"`
	Exports []string `json:"exports"`
	Imports []Import `json:"imports"`
	Needs   Needs    `json:"needs"`
	// DeclaredMinPages is the module's declared minimum memory, in 64 KiB
	// pages (a Go module needs more than this to start: ≈50 pages).
	DeclaredMinPages uint64 `json:"declared_min_pages"`
	// Tools is the module's tool list with input schemas.
	Tools     []*mcp.Tool `json:"tools"`
	Resources bool        `json:"resources"`
	Prompts   bool        `json:"prompts"`
	// ConfigKeys are the keys the module asked config_get for while
	// listing its tools (with no config granted). Keys read only inside
	// tool calls cannot be known without calling them.
	ConfigKeys []string `json:"config_keys"`
}

// CheckModule reads the module at path without compiling or running it and
// returns the linear memory it declares as its minimum, in bytes (0 when it
// declares no memory of its own). Errors: the file cannot be read (wraps
// its *fs.PathError); it is not WebAssembly, or it matches no supported
// plugin ABI (ErrABI). It fits config.CheckOptions.Module, which
// toolhost check uses (with DefaultMemory as CheckOptions.DefaultMemory). A Go module needs more than its declared minimum to
// start; only starting it tells how much.
func CheckModule(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	mod, err := wasmfile.Parse(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %v: %w", path, err, ErrABI)
	}
	if _, err := detectABI(mod); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if !mod.HasMemory {
		return 0, nil
	}
	return int64(mod.MemMin * PageSize), nil
}

// Inspect loads the module at path as a Manifest with no capability
// granted (no network, no files, no config, no environment; memory
// opts.Memory, one instance) and reports its ABI, exports,
// imports, capability needs, tools and the config keys it reads while
// listing tools. It returns a partial Report with the error when the module
// parses but cannot be loaded (e.g. ErrABI).
func Inspect(ctx context.Context, path string, opts *InspectOptions) (*Report, error) {
	if opts == nil {
		opts = &InspectOptions{}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sandbox: inspect: %w: %w", err, transport.ErrStart)
	}
	sum := sha256.Sum256(b)
	r := &Report{Path: path, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(b)), Exports: []string{}, Imports: []Import{}, ConfigKeys: []string{}}
	mod, err := wasmfile.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("sandbox: inspect %s: %v: %w", path, err, ErrABI)
	}
	r.DeclaredMinPages = mod.MemMin
	for n := range mod.Exports {
		r.Exports = append(r.Exports, n)
	}
	sort.Strings(r.Exports)
	seen := map[Import]bool{}
	for _, im := range mod.Imports {
		imp := Import{Module: im.Module, Name: im.Name}
		if im.Kind == wasmfile.KindFunc {
			imp.Signature = im.Type.String()
		}
		// A module may import one function more than once (Go's linker
		// does, for fd_write): list it once.
		if seen[imp] {
			continue
		}
		seen[imp] = true
		r.Imports = append(r.Imports, imp)
		switch {
		case im.Module == "extism:host/env" && im.Name == "http_request":
			r.Needs.HTTP = true
		case im.Module == "extism:host/env" && im.Name == "config_get":
			r.Needs.Config = true
		case im.Module == "extism:host/env" && (im.Name == "var_get" || im.Name == "var_set"):
			r.Needs.Vars = true
		case im.Module == "extism:host/env" && strings.HasPrefix(im.Name, "log_"):
			r.Needs.Logging = true
		case im.Module == "wasi_snapshot_preview1" && strings.HasPrefix(im.Name, "path_"):
			r.Needs.Files = true
		case im.Module == toolsModule:
			r.Needs.Tools = true
		}
	}
	if r.ABI, err = detectABI(mod); err != nil {
		return r, fmt.Errorf("sandbox: inspect %s: %w", path, err)
	}

	e := opts.Engine
	if e == nil {
		if e, err = NewEngine(nil); err != nil {
			return r, err
		}
		defer e.Close()
	}
	m := &Manifest{Name: "inspect", Path: path, Capabilities: Capabilities{Memory: opts.Memory}, Timeout: opts.Timeout, Instances: 1}
	p := e.Plugin(m, nil)
	var mu sync.Mutex
	keys := map[string]bool{}
	p.onConfigGet = func(k string) {
		mu.Lock()
		keys[k] = true
		mu.Unlock()
	}
	defer p.Close()
	init, err := p.Connect(ctx)
	if err != nil {
		return r, err
	}
	r.Resources = init.Capabilities.Resources != nil
	r.Prompts = init.Capabilities.Prompts != nil
	if r.Tools, err = p.ListTools(ctx); err != nil {
		return r, err
	}
	mu.Lock()
	for k := range keys {
		r.ConfigKeys = append(r.ConfigKeys, k)
	}
	mu.Unlock()
	sort.Strings(r.ConfigKeys)
	return r, nil
}
