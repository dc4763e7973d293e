package gateway_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// benchConfig is a fixture server and the pdk echo plugin, open to all.
func benchConfig(b *testing.B) string {
	wasm := wasmbuild.Build(b, filepath.Join(testutil.Root(), "testdata", "plugins"), "./pdkecho")
	return fmt.Sprintf(`
[servers.fx]
command = %q
startup_timeout = "10m"

[plugins.wasm]
path = %q
instances = 2
startup_timeout = "10m"
`, testutil.Fixture(b), wasm)
}

// latencies records one duration per call and reports the median and the
// 99th percentile in microseconds.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B) {
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	q := func(p float64) float64 { return float64(l.d[int(p*float64(len(l.d)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(q(0.5), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

func benchCalls(b *testing.B, cs *mcp.ClientSession, name string, args map[string]any) {
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	var lat latencies
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		res, err := cs.CallTool(ctx, params)
		lat.add(time.Since(t0))
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkGatewayCall is the gateway hop: one tool call made with the
// go-sdk client directly to the Go fixture server over stdio
// (via=direct), and the same call through toolhost serve, over stdio (a
// real toolhost child process) and Streamable HTTP (an in-process gateway
// on a loopback listener), to the fixture server (target=fixture) and to a
// Wasm plugin (target=wasm).
func BenchmarkGatewayCall(b *testing.B) {
	ctx := context.Background()
	src := benchConfig(b)
	args := map[string]any{"text": "hello"}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil)

	b.Run("target=fixture/via=direct", func(b *testing.B) {
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(testutil.Fixture(b))}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		benchCalls(b, cs, "echo", args)
	})

	// The floor of any gateway built on the go-sdk: a bare go-sdk server
	// whose tool handler makes the same call with a go-sdk client to the
	// fixture (no policy, validation, audit or supervision), served over
	// an in-memory transport, to set against via=gateway-mem.
	b.Run("target=fixture/via=sdk-proxy-mem", func(b *testing.B) {
		up, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(testutil.Fixture(b))}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer up.Close()
		proxy := mcp.NewServer(&mcp.Implementation{Name: "proxy"}, nil)
		proxy.AddTool(&mcp.Tool{Name: "fx__echo", InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return up.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: req.Params.Arguments})
			})
		ct, st := mcp.NewInMemoryTransports()
		ss, err := proxy.Connect(ctx, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer ss.Close()
		cs, err := client.Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		benchCalls(b, cs, "fx__echo", args)
	})

	cfgPath := filepath.Join(b.TempDir(), "toolhost.toml")
	if err := os.WriteFile(cfgPath, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	bin := testutil.GoBinary(b, "./cmd/toolhost")
	for _, target := range []string{"fixture", "wasm"} {
		tool := map[string]string{"fixture": "fx__echo", "wasm": "wasm__echo"}[target]
		b.Run("target="+target+"/via=gateway-stdio", func(b *testing.B) {
			cmd := exec.Command(bin, "--config", cfgPath, "serve", "--stdio")
			if g := os.Getenv("BENCH_GATEWAY_GOGC"); g != "" {
				cmd.Env = append(os.Environ(), "GOGC="+g)
			}
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			benchCalls(b, cs, tool, args)
		})
	}

	f := startTB(b, src)
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	for _, target := range []string{"fixture", "wasm"} {
		tool := map[string]string{"fixture": "fx__echo", "wasm": "wasm__echo"}[target]
		// The hops apart: the host alone (toolhost's client hop to the
		// backend, no MCP server side), and the gateway in process over
		// an in-memory transport (the server side too, but no client
		// stdio hop).
		b.Run("target="+target+"/via=host", func(b *testing.B) {
			var lat latencies
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				res, err := f.h.CallTool(ctx, tool, args)
				lat.add(time.Since(t0))
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
			b.StopTimer()
			lat.report(b)
		})
		b.Run("target="+target+"/via=gateway-mem", func(b *testing.B) {
			mctx, cancel := context.WithCancel(ctx)
			ct, st := mcp.NewInMemoryTransports()
			served := make(chan error, 1)
			go func() { served <- f.g.ServeTransport(mctx, st) }()
			cs, err := client.Connect(mctx, ct, nil)
			if err != nil {
				b.Fatal(err)
			}
			benchCalls(b, cs, tool, args)
			cs.Close()
			cancel()
			<-served
		})
	}
	for _, target := range []string{"fixture", "wasm"} {
		tool := map[string]string{"fixture": "fx__echo", "wasm": "wasm__echo"}[target]
		b.Run("target="+target+"/via=gateway-http", func(b *testing.B) {
			cs, err := connectHTTP(ctx, srv.URL+"/mcp", "")
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			benchCalls(b, cs, tool, args)
		})
	}
	// Issue 26: the fast path off, TBXark/mcp-proxy, all ways interleaved.
	benchHop(b, client, bin, cfgPath, srv.URL+"/mcp")
}

// BenchmarkGatewayThroughput is calls per second through the HTTP gateway
// with 1, 16 and 64 concurrent clients (one session each), to the Wasm
// plugin and to the fixture server.
func BenchmarkGatewayThroughput(b *testing.B) {
	ctx := context.Background()
	f := startTB(b, benchConfig(b))
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	for _, target := range []string{"wasm", "fixture"} {
		tool := map[string]string{"fixture": "fx__echo", "wasm": "wasm__echo"}[target]
		for _, n := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("target=%s/clients=%d", target, n), func(b *testing.B) {
				sessions := make([]*mcp.ClientSession, n)
				for i := range sessions {
					cs, err := connectHTTP(ctx, srv.URL+"/mcp", "")
					if err != nil {
						b.Fatal(err)
					}
					defer cs.Close()
					sessions[i] = cs
				}
				var next atomic.Int64
				var lat latencies
				params := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hello"}}
				b.SetParallelism((n + 1) / 2) // GOMAXPROCS (2) × this = n goroutines
				b.ResetTimer()
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					cs := sessions[int(next.Add(1)-1)%n]
					for pb.Next() {
						t0 := time.Now()
						if _, err := cs.CallTool(ctx, params); err != nil {
							b.Error(err)
							return
						}
						lat.add(time.Since(t0))
					}
				})
				b.StopTimer()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
				lat.report(b)
			})
		}
	}
}
