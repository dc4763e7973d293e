package gateway_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/otelx"
	"github.com/toolhost/toolhost/internal/otelx/otlptest"
)

// tracing turns toolhost's tracing on for the test, exporting to a real
// OTLP/HTTP receiver on loopback, and returns the receiver and the
// shutdown that flushes the spans to it (also run when the test ends).
func tracing(t *testing.T) (*otlptest.Receiver, func()) {
	t.Helper()
	r := otlptest.New(t)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, "")
		}
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.Endpoint)
	shutdown, err := otelx.Setup(context.Background(), func(err error) { t.Errorf("exporter: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	flush := func() {
		if err := shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(flush)
	return r, flush
}

// TestTraceparentContinued: a go-sdk client's tools/call through the
// gateway over Streamable HTTP with _meta.traceparent (and tracestate)
// continues the client's trace: the host's span has the client's trace id
// and span as its parent, names the session, and the audit record's
// trace_id is the client's. A hostile traceparent (malformed, oversized,
// not a string) is ignored, never an error: the call succeeds in a new
// trace, which its audit record names.
func TestTraceparentContinued(t *testing.T) {
	r, flush := tracing(t)
	f := start(t, testConfig)
	url := serveLoopback(t, f)
	ctx := context.Background()
	cs, err := connectHTTP(ctx, url, "bob-token-0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	const (
		clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		clientSpan  = "00f067aa0ba902b7"
	)
	good := mcp.Meta{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01", "tracestate": "vendor=opaque"}
	hostile := []any{
		"00-" + clientTrace + "-" + clientSpan, // no flags
		"00-" + strings.ToUpper(clientTrace) + "-" + clientSpan + "-01",
		"01-" + clientTrace + "-" + clientSpan + "-01-" + strings.Repeat("x", 4096),
		"<script>alert(1)</script>",
		12345,
		map[string]any{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"},
	}
	calls := []mcp.Meta{good}
	for _, h := range hostile {
		calls = append(calls, mcp.Meta{"traceparent": h})
	}
	for i, meta := range calls {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: "fx__echo", Arguments: map[string]any{"text": "traced"}})
		if err != nil || res.IsError {
			t.Fatalf("call %d (%v): %v %v", i, meta, err, res)
		}
	}
	flush()

	spans := r.Named("tools/call fx__echo")
	if len(spans) != len(calls) {
		t.Fatalf("%d spans, want %d: %v", len(spans), len(calls), spans)
	}
	records := f.records()
	if len(records) != len(calls) {
		t.Fatalf("%d audit records", len(records))
	}
	continued := 0
	for _, s := range spans {
		if s.TraceID() == clientTrace {
			continued++
			if s.ParentID() != clientSpan || s.TraceState != "vendor=opaque" {
				t.Errorf("continued span: parent %q, tracestate %q", s.ParentID(), s.TraceState)
			}
			if s.Attrs["mcp.session.id"] != cs.ID() || cs.ID() == "" {
				t.Errorf("mcp.session.id %q, session %q", s.Attrs["mcp.session.id"], cs.ID())
			}
			if s.Attrs["toolhost.client"] != "bob" || s.Attrs["gen_ai.tool.name"] != "fx__echo" {
				t.Errorf("attributes %v", s.Attrs)
			}
			continue
		}
		if len(s.ParentSpanId) != 0 {
			t.Errorf("hostile traceparent: span has parent %q", s.ParentID())
		}
	}
	if continued != 1 {
		t.Errorf("%d spans in the client's trace, want 1", continued)
	}
	if records[0].TraceID != clientTrace {
		t.Errorf("audit trace_id %q, want the client's %q", records[0].TraceID, clientTrace)
	}
	seen := map[string]bool{}
	for _, s := range spans {
		seen[s.TraceID()] = true
	}
	for i, rec := range records {
		if !seen[rec.TraceID] || i > 0 && rec.TraceID == clientTrace {
			t.Errorf("audit record %d: trace_id %q, not its span's", i, rec.TraceID)
		}
	}
}

// TestTraceparentREST: a REST invoke continues the W3C trace context of
// its traceparent and tracestate headers; a malformed or repeated header
// starts a new trace and never fails the call.
func TestTraceparentREST(t *testing.T) {
	r, flush := tracing(t)
	f := start(t, testConfig)
	url := strings.TrimSuffix(serveLoopback(t, f), "/mcp")
	const (
		clientTrace = "4bf92f3577b34da6a3ce929d0e0e4737"
		clientSpan  = "00f067aa0ba902b8"
	)
	good := "00-" + clientTrace + "-" + clientSpan + "-01"
	for i, hdr := range [][]string{{good}, {"<script>"}, {good, good}, {strings.Repeat("0", 4096)}} {
		req, _ := http.NewRequest("POST", url+"/api/v1/mcp/invoke", strings.NewReader(`{"name":"fx__echo","params":{"text":"traced"}}`))
		req.Header.Set("Authorization", "Bearer bob-token-0123456789ab")
		req.Header.Set("Content-Type", "application/json")
		for _, v := range hdr {
			req.Header.Add("traceparent", v)
		}
		if i == 0 {
			req.Header.Set("tracestate", "vendor=rest")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("invoke %d: %s %s", i, resp.Status, body)
		}
	}
	flush()
	spans := r.Named("tools/call fx__echo")
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 4", len(spans))
	}
	continued := 0
	for _, s := range spans {
		if s.TraceID() == clientTrace {
			continued++
			if s.ParentID() != clientSpan || s.TraceState != "vendor=rest" || s.Attrs["toolhost.client"] != "bob" {
				t.Errorf("continued span: parent %q, tracestate %q, attributes %v", s.ParentID(), s.TraceState, s.Attrs)
			}
		} else if len(s.ParentSpanId) != 0 {
			t.Errorf("a bad traceparent header: span has parent %q", s.ParentID())
		}
	}
	if continued != 1 {
		t.Errorf("%d spans in the client's trace, want 1", continued)
	}
}
