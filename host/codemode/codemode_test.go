package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/codemode"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func cacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "toolhost", "wasm-test")
}

// fakeCaller serves fx__echo (its arguments as text and structured) and
// refuses fx__denied as the policy does.
type fakeCaller struct {
	mu    sync.Mutex
	calls int
}

func (f *fakeCaller) CallTool(ctx context.Context, name string, args any) (*mcp.CallToolResult, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	switch name {
	case "fx__echo":
		b, _ := json.Marshal(args)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
	case "fx__block":
		<-ctx.Done()
		return nil, ctx.Err()
	case "fx__denied":
		return nil, fmt.Errorf("%w: %q by the profile's deny", host.ErrToolNotAllowed, name)
	}
	return nil, fmt.Errorf("%w: %q", host.ErrUnknownTool, name)
}

func newRunner(t *testing.T, cfg config.CodeMode) *codemode.Runner { return newRunnerTB(t, cfg) }

func newRunnerTB(t testing.TB, cfg config.CodeMode) *codemode.Runner {
	t.Helper()
	cfg.Plugin = wasmbuild.Build(t, filepath.Join(testutil.Root(), "plugins"), "./jsrun")
	r, err := codemode.New(&codemode.Options{Config: cfg, CacheDir: cacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	// The first load may wait for a cold compile of the ≈20 MB module
	// (minutes under -race on a busy machine).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := r.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

func text(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	t, _ := res.Content[0].(*mcp.TextContent)
	if t == nil {
		return ""
	}
	return t.Text
}

// TestRun: a program's calls reach the caller, a denied call is an Error it
// can catch, logs and the value come back, and the inner calls carry the
// run's correlation id as their parent.
func TestRun(t *testing.T) {
	r := newRunner(t, config.CodeMode{})
	f := &fakeCaller{}
	ctx := host.WithCorrelationID(context.Background(), "run-1")
	res, err := r.Run(ctx, f, nil, `
		const a = await tools.fx__echo({n: 20});
		let denied;
		try { await tools.fx__denied({}) } catch (e) { denied = e.code + ": " + e.message }
		console.log("denied:", denied);
		return a.structuredContent.n + 22;`)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !strings.Contains(text(res), "denied: failed: fx__denied:") || !strings.HasSuffix(text(res), "\n42") {
		t.Fatalf("result %q (isError %v)", text(res), res.IsError)
	}
	var sc struct {
		Result int      `json:"result"`
		Logs   []string `json:"logs"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &sc); err != nil || sc.Result != 42 || len(sc.Logs) != 1 {
		t.Fatalf("structured %s: %v", b, err)
	}
	if f.calls != 2 {
		t.Errorf("%d inner calls, want 2", f.calls)
	}
}

// TestRunLimits (issue 27, item 4): an infinite loop, a memory balloon,
// deep recursion, a flood of inner calls and a flood of result bytes each
// end the run with a distinct error within its limit, and the pool stays
// healthy: the next run succeeds every time.
func TestRunLimits(t *testing.T) {
	r := newRunner(t, config.CodeMode{Timeout: config.Duration(5 * time.Second), Memory: 64 << 20, MaxCalls: 10, MaxResult: 4 << 10, Instances: 2})
	f := &fakeCaller{}
	healthy := func(t *testing.T) {
		t.Helper()
		res, err := r.Run(context.Background(), f, nil, `return 6 * 7`)
		if err != nil || res.IsError || text(res) != "42" {
			t.Fatalf("the next run: %v %q", err, text(res))
		}
	}
	healthy(t)
	for _, tt := range []struct {
		name, code string
		err        error  // the run's error, or nil for an isError result
		want       string // in the error or the result's text
	}{
		{"infinite loop", `for (;;) {}`, transport.ErrTimeout, "code_mode.timeout, 5s"},
		{"memory balloon", `let s = "x"; const a = []; for (;;) { s = s + s; a.push(s) }`, sandbox.ErrMemoryLimit, "code_mode.memory, 64MiB"},
		{"deep recursion", `function f(n) { return f(n + 1) + 1 }; return f(0)`, nil, "RangeError: Maximum call stack size exceeded"},
		{"flood of inner calls", `for (;;) await tools.fx__echo({})`, nil, "max_calls (10 per run)"},
		{"flood of result bytes", `for (let i = 0; i < 10; i++) await tools.fx__echo({pad: "x".repeat(1000)})`, nil, "max_result (4096 bytes per run)"},
		{"inner call past the deadline", `await tools.fx__block({})`, transport.ErrTimeout, "code_mode.timeout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			res, err := r.Run(context.Background(), f, nil, tt.code)
			took := time.Since(start)
			if tt.err != nil {
				if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want %v with %q", err, tt.err, tt.want)
				}
				// Every hint names the table the limit comes from.
				if strings.Contains(err.Error(), "[plugins.") {
					t.Fatalf("err = %v: names a [plugins.NAME] table; the limits are [code_mode]'s", err)
				}
			} else if err != nil || !res.IsError || !strings.Contains(text(res), tt.want) {
				t.Fatalf("err %v, result %q: want an isError result with %q", err, text(res), tt.want)
			}
			if took > time.Minute {
				t.Errorf("took %v", took)
			}
			healthy(t)
		})
	}
	// A caller's cancellation ends a run at once, its inner call too.
	ctx, cancel := context.WithCancel(context.Background())
	var started atomic.Bool
	go func() {
		testutil.Eventually(t, time.Minute, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.calls > 0 && started.Load() })
		cancel()
	}()
	f.mu.Lock()
	f.calls = 0
	f.mu.Unlock()
	started.Store(true)
	if _, err := r.Run(ctx, f, nil, `await tools.fx__block({})`); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	healthy(t)
}

func TestArgs(t *testing.T) {
	if c, err := codemode.Args(json.RawMessage(`{"code":"return 1"}`)); err != nil || c != "return 1" {
		t.Fatal(c, err)
	}
	for _, bad := range []string{`{}`, `{"code":1}`, `[]`, `nul`, `{"code":null}`} {
		if _, err := codemode.Args(json.RawMessage(bad)); !errors.Is(err, codemode.ErrBadCode) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestDeclarations(t *testing.T) {
	tools := []*mcp.Tool{
		{Name: "fs__read_file", Description: "Read a file. */ evil", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"}}},
		{Name: "everything__get-sum", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"integer"},"mode":{"enum":["x","y"]},"tags":{"type":"array","items":{"type":["string","null"]}},"opt":{"type":"object","additionalProperties":{"type":"boolean"}}},"required":["a","b"]}`)},
	}
	d := codemode.Declarations(tools, false, 0)
	for _, want := range []string{
		`"everything__get-sum"(args: {a: number; b: number; mode?: "x" | "y"; opt?: Record<string, boolean>; tags?: (string | null)[]}): Promise<CallToolResult>;`,
		`/** Read a file. * / evil */`,
		`fs__read_file(args: {path: string}): Promise<CallToolResult>;`,
		`declare function callTool(`,
	} {
		if !strings.Contains(d, want) {
			t.Errorf("declarations lack %q:\n%s", want, d)
		}
	}
	if strings.Contains(d, "searchTools") {
		t.Error("searchTools declared without search")
	}
	// Hostile: deep, wide and many tools stay within the bound.
	deep := map[string]any{"type": "string"}
	for range 50 {
		deep = map[string]any{"type": "object", "properties": map[string]any{"x": deep}}
	}
	var many []*mcp.Tool
	for i := range 2000 {
		many = append(many, &mcp.Tool{Name: fmt.Sprintf("t%04d", i), Description: strings.Repeat("d", 5000), InputSchema: deep})
	}
	d = codemode.Declarations(many, true, 8<<10)
	if len(d) > 8<<10+4<<10 || !strings.Contains(d, "more tools, not declared here") || !strings.Contains(d, "any") || !strings.Contains(d, "searchTools") {
		t.Errorf("bounded declarations: %d bytes\n%.2000s", len(d), d)
	}
	tool := codemode.Tool(tools, false, 0)
	if tool.Name != "run_code" || !strings.Contains(tool.Description, "```ts\ninterface CallToolResult") {
		t.Errorf("tool %+v", tool)
	}
}
