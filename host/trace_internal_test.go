package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/otelx"
)

// TestTraceLayerOffAllocs: with tracing off (no OTEL_EXPORTER_OTLP_* set
// up, no span in the context) the trace layer allocates nothing.
func TestTraceLayerOffAllocs(t *testing.T) {
	if otelx.Enabled() {
		t.Skip("tracing is on")
	}
	next := func(context.Context, *op) (any, error) { return nil, nil }
	run := traceLayer(&Host{}, next)
	o := &op{req: request{method: methodCallTool, name: "t__echo"}}
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() { run(ctx, o) }); n != 0 {
		t.Fatalf("%v allocations per op with tracing off", n)
	}
}

// overheadHost is BenchmarkHostOverhead's Host (checks off): one plugin
// backend "t" answering at once.
func overheadHost(b *testing.B) *Host {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}
	enc, _ := json.Marshal(res)
	cfg, err := config.Parse(nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	h, err := New(context.Background(), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	never := 0
	be := h.newBackend("t", KindPlugin, "t__", 30*time.Second, config.Supervision{
		HealthCheck: config.HealthNone, HealthThreshold: 3, MaxRestarts: &never,
		CircuitBreaker: config.Circuit{Failures: 5, Cooldown: config.Duration(time.Minute), Successes: 3}})
	be.tr = &sizedFake{fakeBackend{res: res}, len(enc)}
	be.state, be.tools, be.known = StateReady, []*mcp.Tool{{Name: "echo", InputSchema: map[string]any{"type": "object"}}}, true
	h.add(be)
	if err := h.rebuild(true); err != nil {
		b.Fatal(err)
	}
	h.noValidate = true
	return h
}

// BenchmarkTraceOverhead is BenchmarkHostOverhead's plugin call (checks
// off) with tracing off, and on: a span per call, recorded by the SDK and
// exported in batches to an exporter that drops them (the cost of the
// span, not of a collector). off is to be compared with
// BenchmarkHostOverhead/kind=plugin/checks=off: the layer adds no
// allocation and a few nanoseconds.
func BenchmarkTraceOverhead(b *testing.B) {
	args := map[string]any{"text": "hello"}
	b.Run("traces=off", func(b *testing.B) {
		h := overheadHost(b)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.CallTool(ctx, "t__echo", args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("traces=on", func(b *testing.B) {
		h := overheadHost(b)
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		old := otel.GetTracerProvider()
		otel.SetTracerProvider(tp)
		b.Cleanup(func() {
			otel.SetTracerProvider(old)
			tp.Shutdown(context.Background())
		})
		ctx, parent := tp.Tracer("bench").Start(context.Background(), "agent")
		defer parent.End()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.CallTool(ctx, "t__echo", args); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestClipUTF8: at most n bytes, valid UTF-8, whatever the input.
func TestClipUTF8(t *testing.T) {
	for _, s := range []string{"", "abc", strings.Repeat("€", 300), "ab\xff\xfe" + strings.Repeat("€", 300), strings.Repeat("\xff", 2000), "\xe2\x82"} {
		for _, n := range []int{0, 1, 2, 3, 4, 7, 512} {
			got := clipUTF8(s, n)
			if len(got) > n || !utf8.ValidString(got) || len(s) <= n && utf8.ValidString(s) && got != s {
				t.Errorf("clipUTF8(%.20q, %d) = %q", s, n, got)
			}
		}
	}
}
