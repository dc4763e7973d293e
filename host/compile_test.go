package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testutil"
)

// TestCompileToolsIsBounded: a backend's schemas are compiled under its
// start's deadline (compileTools stops with the context's error), each
// tool's result (a schema, or why it does not compile) is kept by the
// backend's own name for the catalogue rebuilds that follow.
func TestCompileToolsIsBounded(t *testing.T) {
	var tools []*mcp.Tool
	for i := range 200 {
		tools = append(tools, &mcp.Tool{Name: fmt.Sprintf("t%d", i), InputSchema: map[string]any{
			"type": "object", "properties": map[string]any{"x": map[string]any{"type": "integer"}},
		}})
	}
	tools = append(tools, &mcp.Tool{Name: "bad", InputSchema: map[string]any{"type": "object", "properties": 7}})

	got, err := compileTools(context.Background(), "p__", tools)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(tools) || got["t0"].in == nil || got["t0"].err != nil {
		t.Fatalf("compiled %d of %d; t0 = %+v", len(got), len(tools), got["t0"])
	}
	if got["bad"].err == nil {
		t.Error("a schema that does not compile has no error")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := compileTools(ctx, "p__", tools); !errors.Is(err, context.Canceled) {
		t.Errorf("compileTools with a done context = %v; want its error", err)
	}
}

// BenchmarkCompileTools compiles the 324 real tool definitions of
// testdata/catalogue (one backend's worth, as a start does); -cpu 1,2
// compares one compiling goroutine with two:
//
//	go test -run '^$' -bench CompileTools -cpu 1,2 -count 6 ./host/
func BenchmarkCompileTools(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(testutil.Root(), "testdata", "catalogue", "tools.json"))
	if err != nil {
		b.Fatal(err)
	}
	var tools []*mcp.Tool
	if err := json.Unmarshal(raw, &tools); err != nil {
		b.Fatal(err)
	}
	if _, err := compileTools(context.Background(), "p__", tools); err != nil { // the metaschemas
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(tools)), "tools")
	for b.Loop() {
		if _, err := compileTools(context.Background(), "p__", tools); err != nil {
			b.Fatal(err)
		}
	}
}
