package gateway_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// BenchmarkCodeMode is the run cost of code mode (issue 27, item 3), warm,
// through the gateway over an in-memory transport with the go-sdk client:
// a plain Wasm tool call (variant=wasm-call, the baseline), a trivial
// run_code (return 1), and run_code making one and two inner calls (the
// pdk echo plugin, then it and the fixture server over stdio). Run with
// -count N: the variants alternate between rounds.
func BenchmarkCodeMode(b *testing.B) {
	ctx := context.Background()
	root := testutil.Root()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = b.TempDir()
	}
	src := fmt.Sprintf(`
[host]
cache_dir = %q

[servers.fx]
command = %q
startup_timeout = "10m"

[plugins.wasm]
path = %q
instances = 2
startup_timeout = "10m"

[serve]
code_mode = true

[code_mode]
plugin = %q
timeout = "10m"
instances = 2
`, filepath.Join(cache, "toolhost", "wasm-test"), testutil.Fixture(b),
		wasmbuild.Build(b, filepath.Join(root, "testdata", "plugins"), "./pdkecho"),
		wasmbuild.Build(b, filepath.Join(root, "plugins"), "./jsrun"))
	f := startTB(b, src)
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- f.g.ServeTransport(mctx, st) }()
	defer func() { cancel(); <-served }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(mctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	// Warm: the first run waits for the plugin's (possibly cold) compile.
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Minute)
	defer wcancel()
	if res, err := cs.CallTool(wctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": "return 1"}}); err != nil || res.IsError {
		b.Fatal(err, res)
	}
	code := func(c string) map[string]any { return map[string]any{"code": c} }
	for _, v := range []struct {
		name, tool string
		args       map[string]any
	}{
		{"variant=wasm-call", "wasm__echo", map[string]any{"text": "hello"}},
		{"variant=run_code-trivial", "run_code", code("return 1")},
		{"variant=run_code-1-call", "run_code", code(`return (await tools.wasm__echo({text: "hello"})).content[0].text`)},
		{"variant=run_code-2-calls", "run_code", code(`const a = await tools.wasm__echo({text: "a"}); const b = await tools.fx__echo({text: "b"}); return a.content[0].text + b.content[0].text`)},
	} {
		b.Run(v.name, func(b *testing.B) { benchCalls(b, cs, v.tool, v.args) })
	}
}
