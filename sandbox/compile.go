package sandbox

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync/atomic"
	"unsafe"

	extism "github.com/extism/go-sdk"
	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/toolhost/toolhost/internal/wasmfile"
	"github.com/toolhost/toolhost/transport"
)

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
		return nil, p.errorf("compiling %s: %v (the module is invalid or imports functions the sandbox does not provide: only wasi_snapshot_preview1 and extism:host/env): %w: %w", p.m.Path, err, ErrABI, transport.ErrInitialize)
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
