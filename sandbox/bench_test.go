package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tetratelabs/wazero"
)

// Run side by side:
//
//	go test -run '^$' -bench 'BenchmarkCall$' -benchmem -count 6 ./sandbox/ | tee /tmp/bench.txt
//	benchstat -col /impl -row .name,/kind /tmp/bench.txt
//
// BenchmarkCall/kind=K/impl=I calls tool "echo" of a fixture plugin (kind=raw:
// testdata/plugins/echo, raw ABI, no pdk; kind=pdk: testdata/plugins/pdkecho,
// written with the pdk) warm, with a per-call deadline enforced by
// close-on-context-done:
//
//   - impl=sandbox: through (*Plugin).CallTool (input encoded, output
//     decoded into an mcp.CallToolResult);
//   - impl=stock: a bare Extism go-sdk CallWithContext of call_tool with the
//     same input, on a plugin built with close-on-context-done;
//   - impl=wazero: the floor, one cached api.Function call of call_tool in a
//     plain wazero runtime next to the smallest Go kernel (rawWazero), the
//     input written and a copy of the output taken (not decoded).
var sink []byte

func BenchmarkCall(b *testing.B) {
	e := newTestEngine(b)
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	input := []byte(`{"request":{"name":"echo","arguments":{"text":"hello"}},"context":{"id":1}}`)
	for _, k := range []struct{ kind, fixture string }{{"raw", "echo"}, {"pdk", "pdkecho"}} {
		path := fixture(b, k.fixture)
		b.Run("kind="+k.kind+"/impl=sandbox", func(b *testing.B) {
			p := connect(b, e, k.fixture, Manifest{Instances: 1}, nil)
			ctx := context.Background()
			// Warm: after a Connect from the tool-list cache the module is
			// compiled in the background; that work is not a call's.
			for range 10 {
				if _, err := p.CallTool(ctx, params); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := p.CallTool(ctx, params)
				if err != nil || resultText(res) != "hello" {
					b.Fatal(err, resultText(res))
				}
			}
		})

		b.Run("kind="+k.kind+"/impl=stock", func(b *testing.B) {
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
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				cctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
				rc, out, err := inst.CallWithContext(cctx, "call_tool", input)
				cancel()
				if err != nil || rc != 0 || len(out) == 0 {
					b.Fatal(err, rc)
				}
			}
		})

		b.Run("kind="+k.kind+"/impl=wazero", func(b *testing.B) {
			r := newRawWazero(b, e.cache, path)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				cctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
				rc, out, err := r.call(cctx, "call_tool", input)
				cancel()
				if err != nil || rc != 0 {
					b.Fatal(err, rc)
				}
				if !bytes.Contains(out, []byte(`"hello"`)) {
					b.Fatal(string(out))
				}
				sink = bytes.Clone(out)
			}
		})
	}
}

// BenchmarkThroughput runs echo calls from 2×GOMAXPROCS goroutines on a pool of 1 and
// of 2 instances, for the raw-ABI (kind=raw) and the pdk (kind=pdk) echo:
// on 2 free cores, instances=2 should take about half the time per call.
func BenchmarkThroughput(b *testing.B) {
	e := newTestEngine(b)
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	for _, k := range []struct{ kind, fixture string }{{"raw", "echo"}, {"pdk", "pdkecho"}} {
		for _, n := range []int{1, 2} {
			b.Run(fmt.Sprintf("kind=%s/instances=%d", k.kind, n), func(b *testing.B) {
				p := connect(b, e, k.fixture, Manifest{Name: fmt.Sprintf("%s%d", k.fixture, n), Instances: n}, nil)
				// Create the second instance before timing.
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() { p.CallTool(context.Background(), params) })
				}
				wg.Wait()
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
		p := e.Plugin(&Manifest{Name: "echo", Path: path}, nil)
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

// BenchmarkGuest runs pdk operations inside a guest
// (testdata/plugins/pdkbench) and reports the guest's own time per
// operation (guest-ns/op, from the guest's monotonic clock; ns/op is the
// whole call of 100 operations). Run:
//
//	go test -run '^$' -bench 'BenchmarkGuest' -count 6 ./sandbox/
func BenchmarkGuest(b *testing.B) {
	e := newTestEngine(b)
	p := connect(b, e, "pdkbench", Manifest{Instances: 1}, nil)
	for _, op := range []string{"none", "bind", "unmarshal", "text"} {
		b.Run("op="+op, func(b *testing.B) {
			params := &mcp.CallToolParams{Name: "bench", Arguments: map[string]any{"op": op, "n": 100, "text": "hello"}}
			var total float64
			for b.Loop() {
				res, err := p.CallTool(context.Background(), params)
				if err != nil || res.IsError {
					b.Fatal(err, resultText(res))
				}
				ns, err := strconv.ParseFloat(resultText(res), 64)
				if err != nil {
					b.Fatal(err)
				}
				total += ns
			}
			b.ReportMetric(total/float64(b.N), "guest-ns/op")
		})
	}
}
