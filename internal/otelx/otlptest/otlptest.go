// Package otlptest is an OTLP/HTTP trace receiver for tests: a real HTTP
// server on loopback that decodes what an OTLP exporter posts to
// /v1/traces (an ExportTraceServiceRequest in protobuf, OTLP specification
// "OTLP/HTTP"), so that a test can assert the spans a process exported.
package otlptest

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// MaxBody bounds a request's body (after decompression), in bytes.
const MaxBody = 16 << 20

// Span is one span received, with its attributes and its resource's as
// strings (ints and bools formatted with %v).
type Span struct {
	*tracepb.Span
	Scope    string
	Attrs    map[string]string
	Resource map[string]string
}

// TraceID returns the span's trace id in hex.
func (s Span) TraceID() string { return fmt.Sprintf("%x", s.Span.TraceId) }

// SpanID returns the span's id in hex.
func (s Span) SpanID() string { return fmt.Sprintf("%x", s.Span.SpanId) }

// ParentID returns the span's parent's id in hex ("" for a root).
func (s Span) ParentID() string { return fmt.Sprintf("%x", s.Span.ParentSpanId) }

// Receiver collects the spans posted to it.
type Receiver struct {
	// Endpoint is the receiver's base URL, the value of
	// OTEL_EXPORTER_OTLP_ENDPOINT ("http://127.0.0.1:PORT"); spans are
	// posted to Endpoint+"/v1/traces".
	Endpoint string

	mu    sync.Mutex
	spans []Span
	bad   []string
}

// New starts a receiver, closed when the test ends (its cleanup fails the
// test if a request could not be decoded).
func New(t testing.TB) *Receiver {
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	r.Endpoint = srv.URL
	t.Cleanup(func() {
		srv.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, b := range r.bad {
			t.Errorf("OTLP receiver: %s", b)
		}
	})
	return r
}

func (r *Receiver) fail(w http.ResponseWriter, code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.bad = append(r.bad, msg)
	r.mu.Unlock()
	http.Error(w, msg, code)
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		r.fail(w, http.StatusNotFound, "%s %s: not an OTLP traces request", req.Method, req.URL.Path)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		r.fail(w, http.StatusUnsupportedMediaType, "Content-Type %q, want application/x-protobuf", ct)
		return
	}
	var body io.Reader = req.Body
	if strings.EqualFold(req.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			r.fail(w, http.StatusBadRequest, "gzip: %v", err)
			return
		}
		defer zr.Close()
		body = zr
	}
	raw, err := io.ReadAll(io.LimitReader(body, MaxBody+1))
	if err != nil || len(raw) > MaxBody {
		r.fail(w, http.StatusRequestEntityTooLarge, "body: %d bytes, %v", len(raw), err)
		return
	}
	var ex collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &ex); err != nil {
		r.fail(w, http.StatusBadRequest, "decoding ExportTraceServiceRequest: %v", err)
		return
	}
	var got []Span
	for _, rs := range ex.ResourceSpans {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				got = append(got, Span{Span: s, Scope: ss.GetScope().GetName(), Attrs: attrs(s.Attributes), Resource: res})
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = fmt.Sprint(x.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = fmt.Sprint(x.DoubleValue)
		default:
			m[kv.Key] = v.String()
		}
	}
	return m
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Named returns the spans received so far whose name is name.
func (r *Receiver) Named(name string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}
