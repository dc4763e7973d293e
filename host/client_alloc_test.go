package host_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// Allocation bounds of one call through Host.CallTool (issue 26, item 2):
// a stdio call to the Go fixture (142 KB before toolhost's own tools/call
// path), and the jq plugin's structured result (38.5 KB before mcpwire).
const (
	maxStdioCallBytes = 16 << 10
	maxJQCallBytes    = 8 << 10
)

// clientHost is a host with the Go fixture over stdio (t__echo) and the jq
// plugin (jq__jq).
func clientHost(tb testing.TB) *host.Host {
	tb.Helper()
	jq := wasmbuild.Build(tb, filepath.Join(testutil.Root(), "plugins"), "./jq")
	cfg := &config.Config{
		Host:    config.Host{CacheDir: tb.TempDir()},
		Servers: map[string]*config.Server{"t": {Name: "t", Command: testutil.Fixture(tb), Supervision: benchStart}},
		Plugins: map[string]*config.Plugin{"jq": {Name: "jq", Path: jq, Instances: 1, Supervision: benchStart}},
	}
	h, err := host.New(context.Background(), cfg, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close() })
	for _, st := range h.Status() {
		if st.State != host.StateReady {
			tb.Fatalf("%s not ready: %s", st.Name, st.LastError)
		}
	}
	return h
}

var (
	clientEchoArgs   = map[string]any{"text": "hello"}
	clientJQPathArgs = map[string]any{"filter": ".a.b", "input": map[string]any{"a": map[string]any{"b": []any{1, 2}}}}
	clientJQArgs     = map[string]any{"filter": ".items[] | select(.price > 10) | {name, price}",
		"input": map[string]any{"items": []any{
			map[string]any{"name": "a", "price": 5}, map[string]any{"name": "b", "price": 12}, map[string]any{"name": "c", "price": 30}}}}
)

// TestHostCallAllocs: a stdio tools/call through the host allocates at
// most 16 KiB, a jq call with a structured result (a path into a small
// input) at most 8 KiB (all of the process's allocations during the calls,
// the lowest of 3 rounds). A larger jq call (clientJQArgs: a select over
// an array) costs the host more for its arguments (decoding, schema
// validation) and is measured by BenchmarkClientCallHost.
func TestHostCallAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	h := clientHost(t)
	ctx := context.Background()
	for _, tc := range []struct {
		tool string
		args map[string]any
		max  uint64
	}{{"t__echo", clientEchoArgs, maxStdioCallBytes}, {"jq__jq", clientJQPathArgs, maxJQCallBytes}} {
		per := testutil.BytesPerCall(200, func() {
			res, err := h.CallTool(ctx, tc.tool, tc.args)
			if err != nil || res.IsError {
				t.Fatal(tc.tool, err, res)
			}
		})
		t.Logf("%s: %d bytes per call", tc.tool, per)
		if per > tc.max {
			t.Errorf("%s allocates %d bytes per call through the host, over %d", tc.tool, per, tc.max)
		}
	}
	res, err := h.CallTool(ctx, "jq__jq", clientJQArgs)
	if err != nil || res.StructuredContent == nil {
		t.Fatalf("jq: %v %#v", err, res)
	}
}

// BenchmarkClientCallHost: a tools/call to the Go fixture over stdio
// through Host.CallTool and through a plain go-sdk client to the same
// binary, and the jq plugin's structured-result call through the host, in
// one run (issue 26, item 2; docs/BENCHMARKS.md).
func BenchmarkClientCallHost(b *testing.B) {
	ctx := context.Background()
	h := clientHost(b)
	b.Run("call=stdio-echo/via=host", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.CallTool(ctx, "t__echo", clientEchoArgs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("call=stdio-echo/via=go-sdk", func(b *testing.B) {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(testutil.Fixture(b))}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		p := &mcp.CallToolParams{Name: "echo", Arguments: clientEchoArgs}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cs.CallTool(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, jq := range []struct {
		name string
		args map[string]any
	}{{"jq-path", clientJQPathArgs}, {"jq-select", clientJQArgs}} {
		b.Run("call="+jq.name+"/via=host", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res, err := h.CallTool(ctx, "jq__jq", jq.args); err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}
