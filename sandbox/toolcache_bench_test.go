package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// BenchmarkConnectToolCache: Connect of the jq plugin (6.8 MB of Go-built
// Wasm) with warm caches, side by side: mode=live compiles it (from the
// compilation cache) and lists on a warm instance, as without the
// tool-list cache; mode=cached lists from the tool-list cache (read and
// hash the file, check it, read the entry); mode=cached_first_call adds the
// first call (compile and instantiate at first use).
// BenchmarkCompileFloor is wazero's own part of a warm compile.
func BenchmarkConnectToolCache(b *testing.B) {
	path := wasmbuild.Build(b, filepath.Join(testutil.Root(), "plugins"), "./jq")
	dir := testCacheDir(b)
	cfg := &Manifest{Name: "jq", Path: path}
	connect := func(b *testing.B, eo *EngineOptions, po *PluginOptions, call bool) {
		e, err := NewEngine(eo)
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		p := e.Plugin(cfg, po)
		defer p.Close()
		if _, err := p.Connect(context.Background()); err != nil {
			b.Fatal(err)
		}
		if _, err := p.ListTools(context.Background()); err != nil {
			b.Fatal(err)
		}
		if call {
			callText(b, p, "jq", map[string]any{"filter": ".a", "input": map[string]any{"a": 1}})
		}
	}
	connect(b, &EngineOptions{CacheDir: dir}, nil, false) // warm both caches
	for _, c := range []struct {
		name string
		eo   *EngineOptions
		po   *PluginOptions
		call bool
	}{
		{"mode=live", &EngineOptions{CacheDir: dir, NoToolCache: true}, nil, false},
		{"mode=cached", &EngineOptions{CacheDir: dir}, &PluginOptions{LazyInstances: true}, false},
		{"mode=cached_first_call", &EngineOptions{CacheDir: dir}, &PluginOptions{LazyInstances: true}, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				connect(b, c.eo, c.po, c.call)
			}
		})
	}
}

// BenchmarkCompileFloor is wazero's CompileModule of the jq plugin from a
// warm compilation cache, alone: it decodes and validates the whole module
// before it looks in the cache, the floor of a first call's compile.
func BenchmarkCompileFloor(b *testing.B) {
	path := wasmbuild.Build(b, filepath.Join(testutil.Root(), "plugins"), "./jq")
	bin, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cache, err := wazero.NewCompilationCacheWithDir(testCacheDir(b))
	if err != nil {
		b.Fatal(err)
	}
	defer cache.Close(ctx)
	rc := wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(true)
	compile := func() {
		r := wazero.NewRuntimeWithConfig(ctx, rc)
		defer r.Close(ctx)
		if _, err := r.CompileModule(ctx, bin); err != nil {
			b.Fatal(err)
		}
	}
	compile() // warm
	for b.Loop() {
		compile()
	}
}
