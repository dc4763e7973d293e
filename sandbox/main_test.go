package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/internal/wasmbuild"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fixture builds testdata/plugins/<name> (once per process) and returns
// the .wasm path.
func fixture(tb testing.TB, name string) string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "testdata", "plugins")
	return wasmbuild.Build(tb, dir, "./"+name)
}

// testCacheDir is a compilation cache shared by the package's test runs, so
// that only the first run on a machine pays for cold compiles.
func testCacheDir(tb testing.TB) string {
	base, err := os.UserCacheDir()
	if err != nil {
		return tb.TempDir()
	}
	return filepath.Join(base, "toolhost", "wasm-test")
}

func newTestEngine(tb testing.TB) *Engine {
	tb.Helper()
	e, err := NewEngine(&EngineOptions{CacheDir: testCacheDir(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

// testLogger records everything the plugin logs.
func testLogger(tb testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: tb.Name(), Level: hclog.Trace, Output: &tbWriter{tb}})
}

type tbWriter struct{ tb testing.TB }

func (w *tbWriter) Write(p []byte) (int, error) { w.tb.Log(string(p)); return len(p), nil }

// connect builds and connects a plugin for the fixture with cfg's limits.
func connect(tb testing.TB, e *Engine, name string, cfg Manifest, opts *PluginOptions) *Plugin {
	tb.Helper()
	if cfg.Name == "" {
		cfg.Name = name
	}
	if cfg.Path == "" {
		cfg.Path = fixture(tb, name)
	}
	p := e.Plugin(&cfg, opts)
	if _, err := p.Connect(context.Background()); err != nil {
		tb.Fatalf("Connect %s: %v", name, err)
	}
	tb.Cleanup(func() { p.Close() })
	return p
}

func callText(tb testing.TB, p *Plugin, tool string, args map[string]any) string {
	tb.Helper()
	res, err := p.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		tb.Fatalf("CallTool %s: %v", tool, err)
	}
	return resultText(res)
}

func resultText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if t, ok := res.Content[0].(*mcp.TextContent); ok {
		return t.Text
	}
	return ""
}
