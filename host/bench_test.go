package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// benchStart gives benchmark backends all the time they need to start: make
// test runs every benchmark once under -race, where compiling a plugin with
// an empty cache on a busy machine takes longer than the default 30s.
var benchStart = config.Supervision{StartupTimeout: config.Duration(10 * time.Minute)}

// BenchmarkCallTool compares a tool call through host.CallTool with the same
// call made directly with a go-sdk ClientSession on the same kind of server,
// for the Go fixture server and server-everything, both over stdio. The
// host's overhead is the ratio host/direct of each pair.
func BenchmarkCallTool(b *testing.B) {
	type target struct {
		name, tool string
		args       map[string]any
		cmd        func(b *testing.B) (string, []string)
	}
	targets := []target{
		{"fixture", "echo", map[string]any{"text": "hello"}, func(b *testing.B) (string, []string) {
			return testutil.Fixture(b), nil
		}},
		{"everything", "echo", map[string]any{"message": "hello"}, func(b *testing.B) (string, []string) {
			testutil.NeedNpx(b)
			return "npx", append(append([]string{}, testutil.EverythingArgs...), "stdio")
		}},
	}
	ctx := context.Background()
	for _, tg := range targets {
		b.Run("server="+tg.name+"/via=direct", func(b *testing.B) {
			path, args := tg.cmd(b)
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(path, args...)}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: tg.tool, Arguments: tg.args}
			b.ResetTimer()
			for b.Loop() {
				if _, err := cs.CallTool(ctx, params); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("server="+tg.name+"/via=host", func(b *testing.B) {
			path, args := tg.cmd(b)
			cfg := &config.Config{Servers: map[string]*config.Server{
				"t": {Name: "t", Command: path, Args: args, InheritEnv: config.DefaultInheritEnv, Supervision: benchStart},
			}}
			h, err := host.New(ctx, cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			name := "t__" + tg.tool
			b.ResetTimer()
			for b.Loop() {
				if _, err := h.CallTool(ctx, name, tg.args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWasmCall puts a warm call of a trivial tool through host.CallTool
// to a plugin written with our pdk (deadline enforced) next to: a bare Extism
// Call of the same export on a plugin built with close-on-context-done (the
// stock floor), the same tool over stdio to the Go fixture MCP server, and a
// plain Go function doing the same work.
func BenchmarkWasmCall(b *testing.B) {
	ctx := context.Background()
	wasm := wasmbuild.Build(b, filepath.Join(testutil.Root(), "testdata", "plugins"), "./pdkecho")
	args := map[string]any{"text": "hello"}

	viaHost := func(wasm string) func(b *testing.B) {
		return func(b *testing.B) {
			cfg := &config.Config{
				Host:    config.Host{CacheDir: b.TempDir()},
				Plugins: map[string]*config.Plugin{"p": {Name: "p", Path: wasm, Instances: 1, Supervision: benchStart}},
			}
			h, err := host.New(ctx, cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			if st := h.Status()[0]; st.State != host.StateReady {
				b.Fatalf("plugin not ready: %s", st.LastError)
			}
			b.ResetTimer()
			for b.Loop() {
				res, err := h.CallTool(ctx, "p__echo", args)
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		}
	}
	b.Run("impl=host-wasm", viaHost(wasm))
	// The same tool in a plugin written against the raw kernel ABI, without
	// the pdk's encoding/json: what the guest's Go code costs.
	b.Run("impl=host-wasm-rawabi", viaHost(wasmbuild.Build(b, filepath.Join(testutil.Root(), "testdata", "plugins"), "./echo")))
	b.Run("impl=extism-stock", func(b *testing.B) {
		manifest := extism.Manifest{
			Wasm: []extism.Wasm{extism.WasmFile{Path: wasm}},
			// A timeout makes the SDK build the runtime with
			// close-on-context-done, as every toolhost call has.
			Timeout: uint64((30 * time.Second).Milliseconds()),
		}
		p, err := extism.NewPlugin(ctx, manifest, extism.PluginConfig{EnableWasi: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close(ctx)
		input := []byte(`{"request":{"name":"echo","arguments":{"text":"hello"}},"context":{}}`)
		b.ResetTimer()
		for b.Loop() {
			rc, out, err := p.CallWithContext(ctx, "call_tool", input)
			if err != nil || rc != 0 || len(out) == 0 {
				b.Fatal(rc, err)
			}
		}
	})
	b.Run("impl=host-stdio", func(b *testing.B) {
		cfg := &config.Config{Servers: map[string]*config.Server{
			"t": {Name: "t", Command: testutil.Fixture(b), Supervision: benchStart},
		}}
		h, err := host.New(ctx, cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		b.ResetTimer()
		for b.Loop() {
			if _, err := h.CallTool(ctx, "t__echo", args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=go-func", func(b *testing.B) {
		echo := func(raw json.RawMessage) *mcp.CallToolResult {
			var in struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(raw, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}
		}
		raw, _ := json.Marshal(args)
		for b.Loop() {
			if res := echo(raw); len(res.Content) != 1 {
				b.Fatal(res)
			}
		}
	})
}

// BenchmarkWasmThroughput measures calls per second on 2 goroutines with a
// pool of 1 instance and of 2 instances (the ratio is the pool's speed-up).
func BenchmarkWasmThroughput(b *testing.B) {
	ctx := context.Background()
	wasm := wasmbuild.Build(b, filepath.Join(testutil.Root(), "testdata", "plugins"), "./pdkecho")
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			cfg := &config.Config{
				Host:    config.Host{CacheDir: b.TempDir()},
				Plugins: map[string]*config.Plugin{"p": {Name: "p", Path: wasm, Instances: n, Supervision: benchStart}},
			}
			h, err := host.New(ctx, cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			b.SetParallelism(1) // GOMAXPROCS goroutines: 2 on this machine
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				args := map[string]any{"text": "hello"}
				for pb.Next() {
					if _, err := h.CallTool(ctx, "p__echo", args); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkWasmInstanceRSS reports the resident memory one more warm
// instance of a plugin costs: RSS after 8 instances of the raw-ABI echo
// fixture were made busy at once (a pool of 8, 8 concurrent 100ms calls),
// minus RSS with one warm instance, divided by 7.
func BenchmarkWasmInstanceRSS(b *testing.B) {
	ctx := context.Background()
	wasm := wasmbuild.Build(b, filepath.Join(testutil.Root(), "testdata", "plugins"), "./echo")
	for b.Loop() {
		cfg := &config.Config{
			Host:    config.Host{CacheDir: filepath.Join(b.TempDir(), "cache")},
			Plugins: map[string]*config.Plugin{"p": {Name: "p", Path: wasm, Instances: 8, Supervision: benchStart}},
		}
		h, err := host.New(ctx, cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		before := rss(b)
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := h.CallTool(ctx, "p__sleep", map[string]any{"text": "100ms"}); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		runtime.GC()
		after := rss(b)
		h.Close()
		b.ReportMetric(float64(after-before)/7/(1<<20), "MiB/instance")
	}
}

// rss returns the process's resident set size in bytes (Linux).
func rss(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	b.Skip("no VmRSS")
	return 0
}

// BenchmarkPolicyOverhead measures what policy, argument validation and the
// audit log add to one call: the same warm call with all three enabled (a
// [policy] with allow and deny globs, the tool's inputSchema checked, one
// JSON line appended to an audit file per call) and with all three disabled,
// on the raw-ABI Wasm echo plugin and on the stdio fixture server. The
// overhead is the difference of the medians of each pair.
func BenchmarkPolicyOverhead(b *testing.B) {
	ctx := context.Background()
	wasm := wasmbuild.Build(b, filepath.Join(testutil.Root(), "testdata", "plugins"), "./echo")
	backends := map[string]string{
		"wasm":  "[plugins.t]\npath = \"" + wasm + "\"\ninstances = 1\nstartup_timeout = \"10m\"\n",
		"stdio": "[servers.t]\ncommand = \"" + testutil.Fixture(b) + "\"\nstartup_timeout = \"10m\"\n",
	}
	const policy = `
[policy]
allow = ["t__*", "other__read_*"]
deny  = ["*__delete_*", "t__crash", "t__sleep"]
`
	args := map[string]any{"text": "hello"}
	for _, kind := range []string{"wasm", "stdio"} {
		for _, on := range []bool{false, true} {
			name := "kind=" + kind + "/checks=off"
			if on {
				name = "kind=" + kind + "/checks=on"
			}
			b.Run(name, func(b *testing.B) {
				src := "[host]\ncache_dir = \"" + b.TempDir() + "\"\n"
				if on {
					src += "audit_log = \"" + filepath.Join(b.TempDir(), "audit.jsonl") + "\"\n" + policy
				}
				cfg, err := config.Parse([]byte(src+backends[kind]), nil)
				if err != nil {
					b.Fatal(err)
				}
				h, err := host.New(ctx, cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer h.Close()
				if !on {
					host.DisableValidation(h)
				}
				if st := h.Status()[0]; st.State != host.StateReady {
					b.Fatalf("backend not ready: %s", st.LastError)
				}
				b.ResetTimer()
				for b.Loop() {
					res, err := h.CallTool(ctx, "t__echo", args)
					if err != nil || res.IsError {
						b.Fatal(err, res)
					}
				}
			})
		}
	}
}
