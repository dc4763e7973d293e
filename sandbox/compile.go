package sandbox

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/toolhost/toolhost/internal/wasmfile"
	"github.com/toolhost/toolhost/transport"
)

// compiledModule is a plugin's module compiled in the plugin's own wazero
// runtime, next to the host modules its instances import: WASI
// (wasi_snapshot_preview1), the Go Extism kernel (envModule) and
// toolhost's host tools (toolsModule, hosttools.go). sandbox
// drives wazero itself (no Extism go-sdk in the path: see docs/RATIONALE.md,
// "Why does sandbox drive wazero itself"), so a call is one Go→Wasm entry.
//
// The runtime is built with the Engine's compilation cache,
// close-on-context-done (a guest still running when its call's context is
// done is stopped) and a memory cap of the plugin's pages. Closing it
// closes every instance made from it.
type compiledModule struct {
	rt  wazero.Runtime
	mod wazero.CompiledModule
}

// Close closes the runtime: the compiled module and every instance of it.
func (c *compiledModule) Close(ctx context.Context) error { return c.rt.Close(ctx) }

// hostModules are the modules a plugin may import from.
var hostModules = []string{wasi_snapshot_preview1.ModuleName, envModule, toolsModule}

// compile builds the plugin's runtime (see compiledModule) with a memory
// cap of pages and compiles wasm in it. Errors wrap ErrABI and
// transport.ErrInitialize: an invalid module, or one that imports a
// function neither host module provides, or with another signature (each
// named in the error).
func (p *Plugin) compile(ctx context.Context, wasm []byte, pages uint32) (*compiledModule, error) {
	rc := wazero.NewRuntimeConfig().
		WithCompilationCache(p.e.cache).
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(pages)
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(bgCtx)
		return nil, p.errorf("building the WASI host module: %v: %w", err, transport.ErrInitialize)
	}
	// The kernel host module goes into the runtime before any instance
	// imports it (instantiation resolves the imports).
	if _, err := hostModule(rt).Instantiate(ctx); err != nil {
		_ = rt.Close(bgCtx)
		return nil, p.errorf("building the kernel host module: %v: %w", err, transport.ErrInitialize)
	}
	if _, err := toolsHostModule(rt).Instantiate(ctx); err != nil {
		_ = rt.Close(bgCtx)
		return nil, p.errorf("building the host-tools module: %v: %w", err, transport.ErrInitialize)
	}
	unlock := p.e.lockModule(sha256.Sum256(wasm)) // see Engine.compiling
	cm, err := rt.CompileModule(ctx, wasm)
	unlock()
	if err == nil {
		err = checkImports(rt, cm)
	}
	if err != nil {
		_ = rt.Close(bgCtx)
		return nil, p.errorf("compiling %s: %v (the module is invalid or imports functions the sandbox does not provide: only wasi_snapshot_preview1, extism:host/env and toolhost:host/tools): %w: %w", p.m.Path, err, ErrABI, transport.ErrInitialize)
	}
	return &compiledModule{rt: rt, mod: cm}, nil
}

// checkImports checks that every function cm imports is exported, with the
// same signature, by one of the host modules in rt, so that a module the
// sandbox cannot serve fails at Connect naming the import rather than at
// its first instance.
func checkImports(rt wazero.Runtime, cm wazero.CompiledModule) error {
	var bad []string
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		var def api.FunctionDefinition
		if slices.Contains(hostModules, mod) {
			if host := rt.Module(mod); host != nil {
				def = host.ExportedFunctionDefinitions()[name]
			}
		}
		switch {
		case def == nil:
			bad = append(bad, fmt.Sprintf("%q.%q (not provided)", mod, name))
		case !slices.Equal(def.ParamTypes(), f.ParamTypes()) || !slices.Equal(def.ResultTypes(), f.ResultTypes()):
			bad = append(bad, fmt.Sprintf("%q.%q (imported as %s, provided as %s)", mod, name, signature(f), signature(def)))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("unusable imports %s", strings.Join(bad, ", "))
	}
	return nil
}

// signature renders a function type as (i64, i64) -> (i32).
func signature(f api.FunctionDefinition) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(s, ", ") + ")"
	}
	return names(f.ParamTypes()) + " -> " + names(f.ResultTypes())
}

// measureMemory finds, by trying, how many pages the module grows to while
// initializing and answering its list export with no memory cap (wazero's
// experimental memory allocator hook records the largest linear memory).
func (p *Plugin) measureMemory(ctx context.Context, wasm []byte, abi ABI) (uint64, error) {
	m := p.m
	m.Memory, m.Timeout = 65536*PageSize, p.timeout
	probe := newPlugin(p.e, &m, &PluginOptions{Logger: hclog.NewNullLogger()})
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
