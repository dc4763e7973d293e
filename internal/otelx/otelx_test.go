package otelx_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/toolhost/toolhost/internal/otelx"
	"github.com/toolhost/toolhost/internal/otelx/otlptest"
	"github.com/toolhost/toolhost/internal/testutil"
)

func TestMain(m *testing.M) {
	before := goleak.IgnoreCurrent()
	code := testutil.Main(m)
	if code == 0 {
		if err := goleak.Find(before); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// otelEnv are the variables Setup reads; each test starts with all unset.
var otelEnv = []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER"}

func clearEnv(t *testing.T, set map[string]string) {
	t.Helper()
	for _, k := range otelEnv {
		t.Setenv(k, set[k])
	}
}

// setup runs Setup and shuts it down (flushing) when the test ends.
func setup(t *testing.T) func(context.Context) error {
	t.Helper()
	shutdown, err := otelx.Setup(context.Background(), func(err error) { t.Errorf("exporter: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(context.Background()) })
	return shutdown
}

// TestSetupOff: without an endpoint, or with the SDK disabled or the
// exporter "none", tracing stays off and Setup does nothing.
func TestSetupOff(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"no endpoint":   {},
		"sdk disabled":  {"OTEL_SDK_DISABLED": "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
		"exporter none": {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1"},
		"protocol only": {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
	} {
		t.Run(name, func(t *testing.T) {
			clearEnv(t, env)
			shutdown := setup(t)
			if otelx.Enabled() {
				t.Fatal("tracing on")
			}
			if err := shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSetupUnsupported: a protocol or exporter toolhost does not ship is
// a distinct error naming the variable, and tracing stays off.
func TestSetupUnsupported(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"grpc":           {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		"traces grpc":    {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
		"zipkin":         {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "zipkin"},
		"unknown format": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/xml"},
	} {
		t.Run(name, func(t *testing.T) {
			clearEnv(t, env)
			shutdown, err := otelx.Setup(context.Background(), nil)
			if !errors.Is(err, otelx.ErrUnsupported) || !strings.Contains(err.Error(), "OTEL_") {
				t.Fatalf("err = %v, want ErrUnsupported naming the variable", err)
			}
			if shutdown == nil || otelx.Enabled() {
				t.Fatal("no shutdown, or tracing on")
			}
		})
	}
}

// TestSetupExports: with an endpoint, spans reach the OTLP/HTTP receiver
// (protobuf, decoded as an ExportTraceServiceRequest) by the time shutdown
// returns, under the service name toolhost unless OTEL_SERVICE_NAME says
// otherwise; after shutdown tracing is off.
func TestSetupExports(t *testing.T) {
	for _, tc := range []struct{ service, want string }{{"", "toolhost"}, {"my-gateway", "my-gateway"}} {
		t.Run(tc.want, func(t *testing.T) {
			r := otlptest.New(t)
			clearEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.Endpoint, "OTEL_SERVICE_NAME": tc.service})
			shutdown := setup(t)
			if !otelx.Enabled() {
				t.Fatal("tracing off")
			}
			_, span := otelx.Tracer().Start(context.Background(), "tools/call x")
			span.End()
			if err := shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if otelx.Enabled() {
				t.Fatal("tracing on after shutdown")
			}
			got := r.Named("tools/call x")
			if len(got) != 1 {
				t.Fatalf("spans %v", r.Spans())
			}
			if got[0].Resource["service.name"] != tc.want || got[0].Scope != otelx.ScopeName {
				t.Errorf("resource %v, scope %q", got[0].Resource, got[0].Scope)
			}
		})
	}
}

// TestShutdownBounded: a collector that does not answer does not hold the
// process past its shutdown context.
func TestShutdownBounded(t *testing.T) {
	clearEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}) // nothing listens on port 1
	shutdown, err := otelx.Setup(context.Background(), func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	_, span := otelx.Tracer().Start(context.Background(), "lost")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	shutdown(ctx)
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("shutdown took %v", d)
	}
}

const (
	validTP  = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	validTID = "0af7651916cd43dd8448eb211c80319c"
)

// TestFromMetaHostile: a client's traceparent that is missing, malformed,
// oversized or not a string is ignored (the call starts a new trace),
// never an error; a bad tracestate is dropped alone; an embedder's span in
// the context wins over the client's; with tracing off nothing is read.
func TestFromMetaHostile(t *testing.T) {
	r := otlptest.New(t)
	clearEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.Endpoint})
	setup(t)
	ctx := context.Background()
	for name, meta := range map[string]map[string]any{
		"nil":             nil,
		"absent":          {"progressToken": 1},
		"number":          {"traceparent": 42},
		"object":          {"traceparent": map[string]any{"a": validTP}},
		"empty":           {"traceparent": ""},
		"garbage":         {"traceparent": "<script>alert(1)</script>"},
		"zero trace id":   {"traceparent": "00-00000000000000000000000000000000-b7ad6b7169203331-01"},
		"zero span id":    {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"},
		"version ff":      {"traceparent": "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		"uppercase":       {"traceparent": strings.ToUpper(validTP)},
		"short":           {"traceparent": validTP[:40]},
		"oversized":       {"traceparent": "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-" + strings.Repeat("a", otelx.MaxTraceParent)},
		"huge":            {"traceparent": strings.Repeat("0", 1<<20)},
		"nul":             {"traceparent": validTP[:54] + "\x00"},
		"version 00 long": {"traceparent": validTP + "-extra"},
	} {
		t.Run(name, func(t *testing.T) {
			if sc := trace.SpanContextFromContext(otelx.FromMeta(ctx, meta)); sc.IsValid() {
				t.Errorf("%q: span context %v taken", meta["traceparent"], sc.TraceID())
			}
		})
	}
	t.Run("valid", func(t *testing.T) {
		sc := trace.SpanContextFromContext(otelx.FromMeta(ctx, map[string]any{"traceparent": validTP, "tracestate": "congo=t61rcWkgMzE"}))
		if !sc.IsValid() || !sc.IsRemote() || sc.TraceID().String() != validTID || sc.TraceState().Get("congo") != "t61rcWkgMzE" {
			t.Errorf("span context %+v", sc)
		}
	})
	t.Run("bad tracestate dropped alone", func(t *testing.T) {
		for _, ts := range []any{strings.Repeat("a=b,", 200), "not a tracestate!!", 7} {
			sc := trace.SpanContextFromContext(otelx.FromMeta(ctx, map[string]any{"traceparent": validTP, "tracestate": ts}))
			if !sc.IsValid() || sc.TraceState().Len() != 0 {
				t.Errorf("tracestate %.20q: span context %+v", ts, sc)
			}
		}
	})
	t.Run("embedder's span wins", func(t *testing.T) {
		own, span := otelx.Tracer().Start(ctx, "embedder")
		defer span.End()
		sc := trace.SpanContextFromContext(otelx.FromMeta(own, map[string]any{"traceparent": validTP}))
		if sc.TraceID() != span.SpanContext().TraceID() {
			t.Errorf("trace %v, want the embedder's %v", sc.TraceID(), span.SpanContext().TraceID())
		}
	})
}

// TestFromMetaOff: with tracing off a client's traceparent is not read (a
// call stays untraced and costs nothing).
func TestFromMetaOff(t *testing.T) {
	clearEnv(t, nil)
	setup(t)
	if sc := trace.SpanContextFromContext(otelx.FromMeta(context.Background(), map[string]any{"traceparent": validTP})); sc.IsValid() {
		t.Fatal("traceparent read with tracing off")
	}
	if ctx := otelx.WithSession(context.Background(), "s"); otelx.Session(ctx) != "" {
		t.Fatal("session kept with tracing off")
	}
}

// TestToMeta: the span's traceparent is added to a copy of the request's
// _meta (the caller's map is not modified); without a span, _meta is
// returned as it is.
func TestToMeta(t *testing.T) {
	meta := map[string]any{"progressToken": "p1"}
	if got := otelx.ToMeta(context.Background(), meta); len(got) != 1 {
		t.Fatalf("without a span: %v", got)
	}
	if got := otelx.ToMeta(context.Background(), nil); got != nil {
		t.Fatalf("without a span, nil meta: %v", got)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: [16]byte{1}, SpanID: [8]byte{2}, TraceFlags: trace.FlagsSampled})
	got := otelx.ToMeta(trace.ContextWithSpanContext(context.Background(), sc), meta)
	if got["traceparent"] != "00-01000000000000000000000000000000-0200000000000000-01" || got["progressToken"] != "p1" || len(meta) != 1 {
		t.Fatalf("meta %v (caller's %v)", got, meta)
	}
}
