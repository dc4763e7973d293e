// Package otelx sets up toolhost's OpenTelemetry tracing from the standard
// environment variables (OpenTelemetry specification, "Environment Variable
// Specification" and "OTLP Exporter Configuration"), and carries the W3C
// Trace Context (https://www.w3.org/TR/trace-context/) in an MCP request's
// _meta, as the OpenTelemetry semantic conventions for MCP specify
// (params._meta.traceparent, params._meta.tracestate).
//
// Tracing is off unless Setup finds an OTLP endpoint configured: then the
// global tracer provider stays OpenTelemetry's no-op one, Enabled is false,
// and nothing here allocates or does work on a call's path. Nothing happens
// at package initialisation: Setup does it all, when called.
package otelx

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhost/toolhost/internal/buildinfo"
)

// ErrUnsupported is returned by Setup for an exporter or protocol toolhost
// does not ship: only OTLP over HTTP (OTEL_TRACES_EXPORTER unset or
// "otlp"; OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
// OTEL_EXPORTER_OTLP_PROTOCOL, unset or "http/protobuf" or "http/json";
// "grpc" is refused).
var ErrUnsupported = errors.New("unsupported OpenTelemetry exporter setting")

// ScopeName is the instrumentation scope of toolhost's spans.
const ScopeName = "github.com/toolhost/toolhost/host"

// MaxTraceParent and MaxTraceState bound the _meta.traceparent and
// _meta.tracestate a client sends, in bytes: a longer value is ignored (the
// call starts a new trace). A version-00 traceparent is 55 bytes; W3C Trace
// Context ("tracestate Limits") lets a vendor drop a tracestate over 512.
const (
	MaxTraceParent = 256
	MaxTraceState  = 512
)

// Meta keys of the W3C Trace Context in an MCP request's _meta.
const (
	MetaTraceParent = "traceparent"
	MetaTraceState  = "tracestate"
)

var (
	enabled atomic.Bool
	tracer  atomic.Pointer[cachedTracer]
)

// cachedTracer is the tracer of the global provider it came from.
type cachedTracer struct {
	tp trace.TracerProvider
	t  trace.Tracer
	// comparable: tp's type is, so that tp == another provider cannot
	// panic (an embedder's provider may be a struct holding a map).
	comparable bool
}

// Enabled reports whether Setup installed toolhost's tracer provider (an
// OTLP endpoint is configured) and it has not been shut down. It is one
// atomic load.
func Enabled() bool { return enabled.Load() }

// Tracer returns toolhost's tracer from the current global tracer provider
// (the one Setup installed, or an embedder's: otel.SetTracerProvider),
// kept while that provider stays the global one.
func Tracer() trace.Tracer {
	tp := otel.GetTracerProvider()
	if c := tracer.Load(); c != nil && c.comparable && c.tp == tp {
		return c.t
	}
	c := &cachedTracer{tp: tp, t: tp.Tracer(ScopeName, trace.WithInstrumentationVersion(buildinfo.Version)), comparable: reflect.TypeOf(tp).Comparable()}
	tracer.Store(c)
	return c.t
}

// Setup installs a tracer provider that exports spans by OTLP/HTTP
// (protobuf, or JSON with OTEL_EXPORTER_OTLP_PROTOCOL=http/json) in
// batches, configured by the standard variables, when
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is
// set, OTEL_SDK_DISABLED is not "true" and OTEL_TRACES_EXPORTER is not
// "none". The exporter reads OTEL_EXPORTER_OTLP_[TRACES_]HEADERS, _TIMEOUT
// (default 10 s), _COMPRESSION and _CERTIFICATE; the SDK reads
// OTEL_TRACES_SAMPLER[_ARG] (default parentbased_always_on), OTEL_BSP_*
// (the batch queue holds at most OTEL_BSP_MAX_QUEUE_SIZE spans, default
// 2048; more are dropped, never buffered without bound),
// OTEL_SERVICE_NAME (default "toolhost") and OTEL_RESOURCE_ATTRIBUTES.
//
// onError, when not nil, receives the exporter's errors (a collector that
// is down) instead of the standard logger. shutdown flushes the spans
// still queued within its context and turns tracing off; it is never nil
// and may be called more than once. Errors wrap ErrUnsupported (a protocol
// other than http/protobuf, an exporter other than otlp) or are the
// exporter's (an endpoint that is not a URL).
func Setup(ctx context.Context, onError func(error)) (shutdown func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return noop, nil
	}
	switch exp := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return noop, nil
	case "", "otlp":
	default:
		return noop, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%q: toolhost exports traces by OTLP only (set it to otlp or none)", ErrUnsupported, exp)
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		return noop, nil
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		p := strings.TrimSpace(os.Getenv(v))
		if p == "" {
			continue
		}
		if p != "http/protobuf" && p != "http/json" {
			return noop, fmt.Errorf("%w: %s=%q: toolhost exports traces by OTLP over HTTP only (set it to http/protobuf or http/json, and the endpoint to the collector's HTTP port, 4318 by default)", ErrUnsupported, v, p)
		}
		break // the traces variable overrides the general one
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return noop, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "toolhost"), attribute.String("service.version", buildinfo.Version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		// A partial resource (a bad OTEL_RESOURCE_ATTRIBUTES entry) is
		// still usable; the error says what was ignored.
		if onError != nil {
			onError(err)
		}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	if onError != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(onError))
	}
	otel.SetTracerProvider(tp)
	enabled.Store(true)
	var done atomic.Bool
	return func(ctx context.Context) error {
		if done.Swap(true) {
			return nil
		}
		enabled.Store(false)
		return tp.Shutdown(ctx)
	}, nil
}

// ShutdownTimeout bounds the flush at exit when the caller has no better
// deadline: a collector that is down does not hold the process longer.
const ShutdownTimeout = 5 * time.Second

var traceContext propagation.TraceContext

// FromMeta returns ctx with the remote span context of the W3C
// traceparent (and tracestate) in an MCP request's _meta, when tracing is
// on (Enabled), ctx carries no valid span context of its own (an
// embedder's span is the parent then), and the traceparent is a string of
// at most MaxTraceParent bytes that parses (version, trace id, parent id,
// flags: W3C Trace Context, "traceparent Header"). Anything else (a
// missing, malformed, oversized or non-string value) is ignored: the call
// starts a new trace. A tracestate that is not a string, is longer than
// MaxTraceState or does not parse is dropped alone.
func FromMeta(ctx context.Context, meta map[string]any) context.Context {
	if !Enabled() || len(meta) == 0 || trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	tp, ok := meta[MetaTraceParent].(string)
	if !ok || len(tp) > MaxTraceParent {
		return ctx
	}
	c := propagation.MapCarrier{MetaTraceParent: tp}
	if ts, ok := meta[MetaTraceState].(string); ok && len(ts) <= MaxTraceState {
		c[MetaTraceState] = ts
	}
	return traceContext.Extract(ctx, c)
}

// ToMeta returns meta with the traceparent (and tracestate) of ctx's span
// added, in a copy (meta itself is not modified), so that a traced MCP
// server continues the trace; meta itself when ctx carries no valid span
// context.
func ToMeta(ctx context.Context, meta map[string]any) map[string]any {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return meta
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	out := make(map[string]any, len(meta)+len(c))
	for k, v := range meta {
		out[k] = v
	}
	for k, v := range c {
		out[k] = v
	}
	return out
}

type sessionKey struct{}

// WithSession returns ctx naming the MCP session a call was made in (the
// Mcp-Session-Id of Streamable HTTP), for the span's mcp.session.id.
func WithSession(ctx context.Context, id string) context.Context {
	if id == "" || !Enabled() {
		return ctx
	}
	return context.WithValue(ctx, sessionKey{}, id)
}

// Session returns the session WithSession named, or "".
func Session(ctx context.Context) string {
	s, _ := ctx.Value(sessionKey{}).(string)
	return s
}
