package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tetratelabs/wazero"
	"github.com/toolhost/toolhost/transport"
)

func TestCounterIsolation(t *testing.T) {
	e := newTestEngine(t)
	pooled := connect(t, e, "counter", Manifest{Instances: 1}, nil)
	fresh := connect(t, e, "counter", Manifest{Name: "counter-fresh", Isolation: "fresh", Instances: 1}, nil)
	for i, want := range []string{"1", "2", "3"} {
		if got := callText(t, pooled, "incr", nil); got != want {
			t.Errorf("pooled call %d = %s, want %s", i, got, want)
		}
		if got := callText(t, fresh, "incr", nil); got != "1" {
			t.Errorf("fresh call %d = %s, want 1", i, got)
		}
	}
}

func TestV1(t *testing.T) {
	e := newTestEngine(t)
	p := connect(t, e, "v1", Manifest{}, nil)
	if p.ABI() != ABIv1 {
		t.Fatalf("ABI %q", p.ABI())
	}
	tools, err := p.ListTools(context.Background())
	if err != nil || len(tools) != 1 || tools[0].Name != "hello" {
		t.Fatalf("tools %v %v", tools, err)
	}
	if got := callText(t, p, "hello", map[string]any{"who": "v1"}); got != "hello, v1" {
		t.Fatalf("got %q", got)
	}
	if _, err := p.ListResources(context.Background()); !errors.Is(err, transport.ErrUnsupported) {
		t.Fatalf("ListResources on v1: %v", err)
	}
}

func TestEchoOperations(t *testing.T) {
	e := newTestEngine(t)
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: &lockedWriter{w: &logs, mu: &mu}})
	p := connect(t, e, "echo", Manifest{Config: map[string]string{"secret": "for-echo-only"}}, &PluginOptions{Logger: logger})
	other := connect(t, e, "counter", Manifest{}, nil)
	_ = other
	ctx := context.Background()

	if got := callText(t, p, "config", map[string]any{"key": "secret"}); got != "for-echo-only" {
		t.Errorf("config = %q", got)
	}
	other2 := connect(t, e, "echo", Manifest{Name: "echo2"}, nil)
	if got := callText(t, other2, "config", map[string]any{"key": "secret"}); got != "<missing>" {
		t.Errorf("config leaked to another plugin: %q", got)
	}

	res, err := p.CallTool(ctx, &mcp.CallToolParams{Name: "fail"})
	if err != nil || !res.IsError || resultText(res) != "echo: asked to fail" {
		t.Errorf("fail: %v %+v", err, res)
	}
	if _, err := p.CallTool(ctx, &mcp.CallToolParams{Name: "rc"}); !errors.Is(err, ErrGuest) {
		t.Errorf("rc without error_set: %v", err)
	}
	if _, err := p.CallTool(ctx, &mcp.CallToolParams{Name: "badjson"}); !errors.Is(err, transport.ErrProtocol) {
		t.Errorf("badjson: %v", err)
	}
	big := strings.Repeat("x", 200<<20)
	if _, err := p.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": big}}); !errors.Is(err, ErrInputTooLarge) {
		t.Errorf("big input: %v", err)
	}

	rs, err := p.ListResources(ctx)
	if err != nil || len(rs) != 1 || rs[0].URI != "echo://hello" {
		t.Errorf("resources %v %v", rs, err)
	}
	rr, err := p.ReadResource(ctx, &mcp.ReadResourceParams{URI: "echo://hello"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "hello" {
		t.Errorf("read %v %v", rr, err)
	}
	ps, err := p.ListPrompts(ctx)
	if err != nil || len(ps) != 1 {
		t.Errorf("prompts %v %v", ps, err)
	}
	gp, err := p.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"})
	if err != nil || len(gp.Messages) != 1 {
		t.Errorf("get prompt %v %v", gp, err)
	}

	callText(t, p, "log", map[string]any{"text": "via log_info"})
	callText(t, p, "print", map[string]any{"text": "via stdout"})
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	for _, want := range []string{"via log_info", "stream=log", "via stdout", "stream=stdout", "stream=stderr"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ListTools(ctx); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestConnectErrors(t *testing.T) {
	e := newTestEngine(t)
	echo := fixture(t, "echo")
	dir := t.TempDir()
	noABI := filepath.Join(dir, "empty.wasm")
	os.WriteFile(noABI, []byte("\x00asm\x01\x00\x00\x00"), 0o644)
	notWasm := filepath.Join(dir, "text.wasm")
	os.WriteFile(notWasm, []byte("hello"), 0o644)
	for _, tt := range []struct {
		name string
		cfg  Manifest
		want []error
		msg  string
	}{
		{"missing", Manifest{Path: filepath.Join(dir, "nope.wasm")}, []error{transport.ErrStart}, ""},
		{"checksum", Manifest{Path: echo, SHA256: strings.Repeat("0", 64)}, []error{ErrChecksum, transport.ErrStart}, ""},
		{"no-abi", Manifest{Path: noABI}, []error{ErrABI, transport.ErrInitialize}, "exports functions []"},
		{"not-wasm", Manifest{Path: notWasm}, []error{ErrABI}, ""},
		{"memory-below-declared", Manifest{Path: echo, Capabilities: Capabilities{Memory: 1 << 20}}, []error{ErrMemoryLimit, transport.ErrInitialize}, "declared minimum"},
		{"memory-below-needed", Manifest{Path: echo, Capabilities: Capabilities{Memory: 37 * PageSize}}, []error{ErrMemoryLimit, transport.ErrInitialize}, "measured by trying"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Name = tt.name
			p := e.Plugin(&tt.cfg, nil)
			defer p.Close()
			_, err := p.Connect(context.Background())
			t.Log(err)
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("%v does not wrap %v", err, w)
				}
			}
			if err != nil && !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("%v does not mention %q", err, tt.msg)
			}
			if _, err := p.ListTools(context.Background()); !errors.Is(err, transport.ErrNotConnected) {
				t.Errorf("after failed Connect: %v", err)
			}
		})
	}
}

func TestEngineCloseOrder(t *testing.T) {
	e, err := NewEngine(&EngineOptions{CacheDir: testCacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	p := e.Plugin(&Manifest{Name: "echo", Path: fixture(t, "echo")}, nil)
	if _, err := p.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Closing the Engine first must not break the connected plugin.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if got := callText(t, p, "echo", map[string]any{"text": "x"}); got != "x" {
		t.Fatalf("after Engine.Close: %q", got)
	}
	p2 := e.Plugin(&Manifest{Name: "echo2", Path: fixture(t, "echo")}, nil)
	if _, err := p2.Connect(context.Background()); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Connect on closed engine: %v", err)
	}
	p.Close()
	e.Close()
}

func TestConcurrentConnect(t *testing.T) {
	e := newTestEngine(t)
	var wg sync.WaitGroup
	for _, name := range []string{"echo", "counter", "v1", "panic", "loop"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := e.Plugin(&Manifest{Name: name, Path: fixture(t, name)}, nil)
			defer p.Close()
			if _, err := p.Connect(context.Background()); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}()
	}
	wg.Wait()
}

func TestCloseDuringCall(t *testing.T) {
	e := newTestEngine(t)
	p := e.Plugin(&Manifest{Name: "loop", Path: fixture(t, "loop")}, nil)
	if _, err := p.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error)
	go func() {
		_, err := p.CallTool(context.Background(), &mcp.CallToolParams{Name: "loop"})
		errc <- err
	}()
	for p.ops.Load() == 0 {
	}
	p.Close()
	if err := <-errc; !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("call during Close: %v", err)
	}
}

func TestInspect(t *testing.T) {
	e := newTestEngine(t)
	r, err := Inspect(context.Background(), fixture(t, "echo"), &InspectOptions{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	if r.ABI != ABIv2 || len(r.Tools) != 8 || !r.Resources || !r.Prompts || !r.Needs.Config || r.Needs.HTTP || !r.Needs.Logging || r.Needs.Tools {
		t.Errorf("report %+v", r)
	}
	if strings.Join(r.ConfigKeys, ",") != "echo_prefix" {
		t.Errorf("config keys %v", r.ConfigKeys)
	}
	r, err = Inspect(context.Background(), fixture(t, "netout"), &InspectOptions{Engine: e})
	if err != nil || !r.Needs.HTTP {
		t.Errorf("netout: %+v %v", r, err)
	}
	r, err = Inspect(context.Background(), fixture(t, "escape"), &InspectOptions{Engine: e})
	if err != nil || !r.Needs.Files {
		t.Errorf("escape: %+v %v", r, err)
	}
	r, err = Inspect(context.Background(), fixture(t, "hosttools"), &InspectOptions{Engine: e})
	if err != nil || !r.Needs.Tools {
		t.Errorf("hosttools: %+v %v", r, err)
	}
}

// TestWarmUpDeadline checks that warming the first instance (_initialize
// and the list export) is bounded by the start deadline, not by the
// per-call timeout: a tight call timeout must not fail a slow first start,
// and a guest that never finishes starting is stopped at the start deadline.
func TestWarmUpDeadline(t *testing.T) {
	e := newTestEngine(t)
	// Shorter than any instantiation: the call timeout must not apply.
	connect(t, e, "echo", Manifest{Name: "tight", Timeout: time.Microsecond}, nil)

	connect(t, e, "loop", Manifest{}, nil) // compiled once, so the deadline below times the warm-up only
	p := e.Plugin(&Manifest{Name: "hang", Path: fixture(t, "loop"), Timeout: time.Minute, Config: map[string]string{"hang_list": "1"}}, nil)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := p.Connect(ctx)
	d := time.Since(start)
	for _, w := range []error{transport.ErrTimeout, context.DeadlineExceeded, transport.ErrInitialize} {
		if !errors.Is(err, w) {
			t.Errorf("%v does not wrap %v", err, w)
		}
	}
	if err != nil && !strings.Contains(err.Error(), "start deadline") {
		t.Errorf("%v does not name the start deadline", err)
	}
	if d > 10*time.Second {
		t.Errorf("Connect returned after %v, want about 1s", d)
	}
}

// TestConcurrentCompileSameModule: plugins of one module compile it at once
// (as two [plugins] entries of one .wasm do when the host starts), each in
// its own runtime from the compilation cache's files, which a first Engine
// wrote; then each instantiates it and looks up its function. Without
// Engine.lockModule, -race finds wazero handing a runtime the module that
// another one is still building (its entry preambles: a call through it
// can panic). The module is the smallest there is, an exported function
// that returns, so that the rounds are many and cheap.
func TestConcurrentCompileSameModule(t *testing.T) {
	wasm := []byte{
		0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // types: func () -> ()
		0x03, 0x02, 0x01, 0x00, // functions: one, of type 0
		0x07, 0x0f, 0x01, 0x0b, '_', 'i', 'n', 'i', 't', 'i', 'a', 'l', 'i', 'z', 'e', 0x00, 0x00, // export it as _initialize
		0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b, // its body: no locals, end
	}
	dir := t.TempDir()
	ctx := context.Background()
	compile := func(e *Engine, name string) error {
		c, err := e.Plugin(&Manifest{Name: name, Path: "tiny.wasm"}, nil).compile(ctx, wasm, 16)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		mod, err := c.rt.InstantiateModule(ctx, c.mod, wazero.NewModuleConfig().WithName("").WithStartFunctions())
		if err != nil {
			return err
		}
		if mod.ExportedFunction("_initialize") == nil {
			return errors.New("no _initialize")
		}
		return nil
	}
	first, err := NewEngine(&EngineOptions{CacheDir: dir, NoToolCache: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := compile(first, "first"); err != nil {
		t.Fatal(err)
	}
	first.Close()
	for round := range 100 {
		e, err := NewEngine(&EngineOptions{CacheDir: dir, NoToolCache: true})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				if err := compile(e, fmt.Sprintf("tiny%d", i)); err != nil {
					t.Errorf("round %d, plugin %d: %v", round, i, err)
				}
			})
		}
		wg.Wait()
		e.Close()
	}
}
