package sandbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tetratelabs/wazero"
	"github.com/toolhost/toolhost/config"
)

// Run side by side:
//
//	go test -run '^$' -bench . -benchtime 2s -count 6 ./sandbox/ | tee /tmp/bench.txt
//
// BenchmarkCall/impl=sandbox is a warm echo call through (*Plugin).CallTool with
// its deadline enforced; BenchmarkCall/impl=stock is the floor: a bare extism
// CallWithContext of the same export with the same input on a plugin built
// with close-on-context-done, under a per-call deadline.

func BenchmarkCall(b *testing.B) {
	e := newTestEngine(b)
	path := fixture(b, "echo")
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}

	b.Run("impl=sandbox", func(b *testing.B) {
		p := connect(b, e, "echo", config.Plugin{Instances: 1}, nil)
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			res, err := p.CallTool(ctx, params)
			if err != nil || resultText(res) != "hello" {
				b.Fatal(err, resultText(res))
			}
		}
	})

	b.Run("impl=stock", func(b *testing.B) {
		ctx := context.Background()
		rc := wazero.NewRuntimeConfig().WithCompilationCache(e.cache).WithCloseOnContextDone(true)
		cp, err := extism.NewCompiledPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmFile{Path: path}}},
			extism.PluginConfig{RuntimeConfig: rc, EnableWasi: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cp.Close(ctx)
		inst, err := cp.Instance(ctx, extism.PluginInstanceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		defer inst.Close(ctx)
		input := []byte(`{"request":{"name":"echo","arguments":{"text":"hello"}},"context":{"id":1}}`)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			cctx, cancel := context.WithTimeout(ctx, config.DefaultCallTimeout)
			rc, out, err := inst.CallWithContext(cctx, "call_tool", input)
			cancel()
			if err != nil || rc != 0 || len(out) == 0 {
				b.Fatal(err, rc)
			}
		}
	})
}

// BenchmarkThroughput runs echo calls from 2 goroutines on a pool of 1 and
// of 2 instances.
func BenchmarkThroughput(b *testing.B) {
	e := newTestEngine(b)
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			p := connect(b, e, "echo", config.Plugin{Name: fmt.Sprintf("echo%d", n), Instances: n}, nil)
			// Create the second instance before timing.
			p.CallTool(context.Background(), params)
			b.SetParallelism(2)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := p.CallTool(context.Background(), params); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkConnect measures time to ready (compile + warm instance) with a
// cold (empty) and a warm compilation cache, the tool-list cache off
// (BenchmarkConnectToolCache measures it on).
func BenchmarkConnect(b *testing.B) {
	path := fixture(b, "echo")
	ready := func(b *testing.B, dir string) time.Duration {
		e, err := NewEngine(&EngineOptions{CacheDir: dir, NoToolCache: true})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		p := e.Plugin(&config.Plugin{Name: "echo", Path: path}, nil)
		if _, err := p.Connect(context.Background()); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		p.Close()
		e.Close()
		return d
	}
	b.Run("cache=cold", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dir := b.TempDir()
			b.StartTimer()
			ready(b, dir)
		}
	})
	b.Run("cache=cached", func(b *testing.B) {
		dir := b.TempDir()
		ready(b, dir)
		b.ResetTimer()
		for b.Loop() {
			ready(b, dir)
		}
	})
}
