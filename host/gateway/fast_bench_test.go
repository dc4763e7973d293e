package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/gateway"
	"github.com/toolhost/toolhost/internal/testutil"
)

// MCPProxyEnv names the TBXark/mcp-proxy binary that the gateway hop
// benchmarks compare with (internal/bench/mcpproxy.sh builds it); unset,
// those variants are skipped.
const MCPProxyEnv = "TOOLHOST_BENCH_MCPPROXY"

// BaselineEnv names another toolhost binary (a build of main, say) that
// via=interleaved runs as one more way, gateway-stdio-base, beside this
// tree's: two builds compared in one run. VariantEnv is extra environment
// (NAME=VALUE, comma-separated) for two more ways, gateway-stdio-variant1
// and gateway-http-serve-variant1, this tree's binary with it (more
// variants separated by ";" are ways variant2, ...): the gateway's
// switches compared in one run.
const (
	BaselineEnv = "TOOLHOST_BENCH_BASELINE"
	VariantEnv  = "TOOLHOST_BENCH_VARIANT_ENV"
)

// hopSession is one way of calling the fixture's echo tool.
type hopSession struct {
	name string
	cs   *mcp.ClientSession
	tool string
}

// gatewayStdio starts `toolhost serve --stdio` as a child (with the fast
// path on, or off: TOOLHOST_GATEWAY_FASTPATH=off) and connects the go-sdk
// client to it.
func gatewayStdio(b *testing.B, client *mcp.Client, bin, cfgPath string, fast bool, env ...string) *mcp.ClientSession {
	cmd := exec.Command(ownCopy(b, bin), "--config", cfgPath, "serve", "--stdio")
	// Each gateway has a store of its own, as each serve of a deployment
	// does (the default: a SQLite file in the state directory, with every
	// call's audit record): not the user's, which grows run after run, and
	// not one file that every way's process writes at once.
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+b.TempDir())
	cmd.Env = append(cmd.Env, env...)
	if !fast {
		cmd.Env = append(cmd.Env, gateway.FastPathEnv+"=off")
	}
	if g := os.Getenv("BENCH_GATEWAY_GOGC"); g != "" {
		cmd.Env = append(cmd.Env, "GOGC="+g)
	}
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// ownCopy returns a copy of the executable bin in a directory of b's, for
// one way's process. Processes of one executable file share its code's
// page-cache pages, and so the CPU caches' lines of them: a way whose
// binary four other ways run too found its code warm in every round, and
// one with a binary of its own (mcp-proxy, a baseline build) cold. The
// same binary measured 6–15% slower as gateway-stdio-base (another file)
// than as gateway-stdio in two runs, and 1% as gateway-stdio-variant1 (the
// same file). With a copy each, every way runs its own file, as a
// deployment's single gateway does.
func ownCopy(b *testing.B, bin string) string {
	b.Helper()
	src, err := os.ReadFile(bin)
	if err != nil {
		b.Fatal(err)
	}
	dst := filepath.Join(b.TempDir(), filepath.Base(bin))
	if err := os.WriteFile(dst, src, 0o755); err != nil {
		b.Fatal(err)
	}
	return dst
}

// gatewayServeHTTP starts `toolhost serve --listen 127.0.0.1:0` (bin) on
// cfgPath as a process of its own, as a user runs it (testutil.ServeHTTP),
// and connects client to its Streamable HTTP endpoint. (via=gateway-http
// serves the same Gateway inside the benchmark's process: its client and
// its server share one runtime.)
func gatewayServeHTTP(b *testing.B, client *mcp.Client, bin, cfgPath string, env ...string) *mcp.ClientSession {
	base := testutil.ServeHTTP(b, ownCopy(b, bin), cfgPath, append(env, "XDG_STATE_HOME="+b.TempDir())...)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// mcpProxy starts TBXark/mcp-proxy (the binary named by MCPProxyEnv) in
// front of the fixture over stdio, serving Streamable HTTP on a loopback
// port, and connects the go-sdk client to it; it skips b when the binary
// is not given.
func mcpProxy(b *testing.B, client *mcp.Client) *mcp.ClientSession {
	bin := os.Getenv(MCPProxyEnv)
	if bin == "" {
		b.Skipf("%s is not set: no TBXark/mcp-proxy to compare with (internal/bench/mcpproxy.sh builds one)", MCPProxyEnv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := map[string]any{
		"mcpProxy": map[string]any{"baseURL": "http://" + addr, "addr": addr, "name": "bench", "version": "1",
			"type": "streamable-http", "options": map[string]any{"logEnabled": false}},
		"mcpServers": map[string]any{"fx": map[string]any{"command": testutil.Fixture(b), "args": []string{}}},
	}
	raw, _ := json.Marshal(cfg)
	path := filepath.Join(b.TempDir(), "mcp-proxy.json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		b.Fatal(err)
	}
	// It logs "All clients initialized" once it serves the fixture's tools.
	startScanned(b, "mcp-proxy", exec.Command(bin, "-config", path), func(line string) (string, bool) {
		return "", strings.Contains(line, "All clients initialized")
	})
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/fx/"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// startScanned starts cmd (killed when b ends) and waits, up to 5
// minutes, for the first line of its stderr that ready takes, and returns
// what ready returned for it; it fails b if cmd exits first. The rest of
// stderr is drained.
func startScanned(b *testing.B, name string, cmd *exec.Cmd, ready func(line string) (string, bool)) string {
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	got := make(chan string, 1)
	failed := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var last string
		for sc.Scan() {
			last = sc.Text()
			if v, ok := ready(last); ok {
				got <- v
				for sc.Scan() { // keep draining: it must not block on a full pipe
				}
				return
			}
		}
		failed <- last
	}()
	select {
	case v := <-got:
		return v
	case last := <-failed:
		b.Fatalf("%s exited before it served: %s", name, last)
	case <-time.After(5 * time.Minute):
		b.Fatalf("%s did not start in 5 minutes", name)
	}
	return ""
}

// httpRelay starts testdata/httprelay (the floor of any Streamable HTTP
// gateway: an HTTP hop and a process that copies messages) in front of
// the fixture, and connects client to it.
func httpRelay(b *testing.B, client *mcp.Client) *mcp.ClientSession {
	base := startScanned(b, "httprelay", exec.Command(testutil.GoBinary(b, "./testdata/httprelay"), testutil.Fixture(b)),
		func(line string) (string, bool) { return strings.CutPrefix(line, "listening on ") })
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// benchHop adds BenchmarkGatewayCall's variants of issue 26 (items 1 and
// 5): via=gateway-stdio-sdk (the gateway with its stdio fast path off),
// via=mcp-proxy (TBXark/mcp-proxy over Streamable HTTP, when MCPProxyEnv
// names it), and via=interleaved and via=interleaved-warm (with way
// relay, the floor of any stdio gateway: testdata/relay copies bytes
// between the client and the fixture), which call every way in rounds, in
// a new order each round, so that all share the machine's load alike, and
// report each way's p50 and p99 in µs and its p50 against direct's.
func benchHop(b *testing.B, client *mcp.Client, bin, cfgPath, httpURL string) {
	args := map[string]any{"text": "hello"}
	b.Run("target=fixture/via=gateway-stdio-sdk", func(b *testing.B) {
		benchCalls(b, gatewayStdio(b, client, bin, cfgPath, false), "fx__echo", args)
	})
	b.Run("target=fixture/via=mcp-proxy", func(b *testing.B) {
		benchCalls(b, mcpProxy(b, client), "echo", args)
	})
	// via=interleaved calls each way once per round: every call comes
	// after the other ways' (≈10 ms of other processes), its process's
	// caches and threads cold — what a call an agent makes now and then
	// meets. via=interleaved-warm calls each way warmRun times in a row per
	// round: sequential calls, as the first figures were taken
	// (2,000 in a row), still sharing the machine's drift alike.
	for _, run := range []int{1, warmRun} {
		name := map[int]string{1: "interleaved", warmRun: "interleaved-warm"}[run]
		b.Run("target=fixture/via="+name, func(b *testing.B) { interleaved(b, client, bin, cfgPath, httpURL, run) })
	}
}

// warmRun is how many calls in a row via=interleaved-warm makes to each
// way per round (the first of them meets the way cold).
const warmRun = 100

// interleaved is via=interleaved (run 1) and via=interleaved-warm: each
// round calls every way run times in a row, the ways in a new order each
// round; b.N calls per way in all.
func interleaved(b *testing.B, client *mcp.Client, bin, cfgPath, httpURL string, run int) {
	args := map[string]any{"text": "hello"}
	ctx := context.Background()
	direct, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(testutil.Fixture(b))}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	http, err := connectHTTP(ctx, httpURL, "")
	if err != nil {
		b.Fatal(err)
	}
	defer http.Close()
	// relay: the floor of any stdio gateway, a process that copies
	// bytes both ways and parses nothing (testdata/relay).
	relay, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(testutil.GoBinary(b, "./testdata/relay"), testutil.Fixture(b))}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer relay.Close()
	ways := []hopSession{
		{"direct", direct, "echo"},
		{"relay", relay, "echo"},
		{"gateway-stdio", gatewayStdio(b, client, bin, cfgPath, true), "fx__echo"},
		{"gateway-stdio-sdk", gatewayStdio(b, client, bin, cfgPath, false), "fx__echo"},
		{"gateway-http", http, "fx__echo"},
		{"gateway-http-serve", gatewayServeHTTP(b, client, bin, cfgPath), "fx__echo"},
		{"http-relay", httpRelay(b, client), "echo"},
	}
	if os.Getenv(MCPProxyEnv) != "" {
		ways = append(ways, hopSession{"mcp-proxy", mcpProxy(b, client), "echo"})
	}
	// The go-sdk client declares roots unless told otherwise, so every
	// way above has a 2026-07-28 call of the gateway's go on a
	// goroutine of its own (an input round may come, mrtr.go); a
	// client that declares nothing has it run inline.
	bare := mcp.NewClient(&mcp.Implementation{Name: "bench"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	ways = append(ways, hopSession{"gateway-stdio-bare", gatewayStdio(b, bare, bin, cfgPath, true), "fx__echo"})
	// gateway-http-serve with the HTTP fast path (fasthttp.go) off.
	ways = append(ways, hopSession{"gateway-http-serve-sdk", gatewayServeHTTP(b, client, bin, cfgPath, gateway.FastPathEnv+"=off"), "fx__echo"})
	if base := os.Getenv(BaselineEnv); base != "" {
		ways = append(ways, hopSession{"gateway-stdio-base", gatewayStdio(b, client, base, cfgPath, true), "fx__echo"})
	}
	if vs := os.Getenv(VariantEnv); vs != "" {
		for i, v := range strings.Split(vs, ";") {
			env := strings.Split(v, ",")
			ways = append(ways,
				hopSession{fmt.Sprintf("gateway-stdio-variant%d", i+1), gatewayStdio(b, client, bin, cfgPath, true, env...), "fx__echo"},
				hopSession{fmt.Sprintf("gateway-http-serve-variant%d", i+1), gatewayServeHTTP(b, client, bin, cfgPath, env...), "fx__echo"})
		}
	}
	lat := make([]latencies, len(ways))
	params := make([]*mcp.CallToolParams, len(ways))
	for i, w := range ways {
		params[i] = &mcp.CallToolParams{Name: w.tool, Arguments: args}
	}
	b.ResetTimer()
	// Each round calls the ways in a new order: in a fixed order a
	// way's latency depends on which way ran just before it (the same
	// binary measured 10–14% slower as the way after
	// gateway-http-serve-sdk than as the way after relay), which
	// skewed every comparison between ways.
	order := make([]int, len(ways))
	for i := range order {
		order[i] = i
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for done := 0; done < b.N; done += run {
		k := min(run, b.N-done)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			w := ways[i]
			for range k {
				t0 := time.Now()
				res, err := w.cs.CallTool(ctx, params[i])
				lat[i].add(time.Since(t0))
				if err != nil || res.IsError {
					b.Fatal(w.name, err, res)
				}
			}
		}
	}
	b.StopTimer()
	p50direct := lat[0].quantile(0.5)
	for i, w := range ways {
		p50 := lat[i].quantile(0.5)
		b.ReportMetric(p50, w.name+"-p50-µs")
		b.ReportMetric(lat[i].quantile(0.99), w.name+"-p99-µs")
		if i > 0 {
			b.ReportMetric(p50/p50direct, w.name+"-p50/direct")
		}
	}
}

// quantile is the q-quantile of the recorded durations, in µs (sorts them).
func (l *latencies) quantile(q float64) float64 {
	if len(l.d) == 0 {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	sorted := append([]time.Duration(nil), l.d...)
	slices.Sort(sorted)
	return float64(sorted[int(q*float64(len(sorted)-1))].Nanoseconds()) / 1e3
}

// BenchmarkGatewayServerSide is the gateway's server side alone: the
// go-sdk client calls the Wasm echo plugin (the host's in-process call,
// ≈30 µs on a quiet machine; target=wasm) or the fixture's echo over
// stdio (target=fixture) through the gateway's stdio serving on pipes in
// process, with the fast path on (via=pipe-fast) and off (via=pipe-sdk);
// with -benchmem, the difference in allocations per call is the server
// side's (the client's are the same in both).
func BenchmarkGatewayServerSide(b *testing.B) {
	f := startTB(b, benchConfig(b))
	client := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil)
	for _, v := range []struct {
		target string
		fast   bool
	}{{"wasm", true}, {"wasm", false}, {"fixture", true}, {"fixture", false}} {
		fast, tool := v.fast, map[string]string{"fixture": "fx__echo", "wasm": "wasm__echo"}[v.target]
		name := map[bool]string{true: "via=pipe-fast", false: "via=pipe-sdk"}[fast]
		b.Run("target="+v.target+"/"+name, func(b *testing.B) {
			if !fast {
				b.Setenv(gateway.FastPathEnv, "off")
			}
			cr, cw := io.Pipe()
			sr, sw := io.Pipe()
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- f.g.ServeTransport(ctx, &mcp.IOTransport{Reader: cr, Writer: sw}) }()
			cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: sr, Writer: cw}, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			benchCalls(b, cs, tool, map[string]any{"text": "hello"})
			cs.Close()
			cancel()
			<-served
		})
	}
}
