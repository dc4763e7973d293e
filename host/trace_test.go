package host_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
)

// metaServer is a Streamable HTTP MCP server on loopback that keeps the
// _meta of every request it is sent (a traced server would continue the
// trace from its traceparent).
type metaServer struct {
	url  string
	mu   sync.Mutex
	seen map[string]mcp.Meta // by method
}

func (s *metaServer) keep(method string, m mcp.Meta) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[method] = m
}

func (s *metaServer) meta(method string) mcp.Meta {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[method]
}

func startMetaServer(t *testing.T) *metaServer {
	ms := &metaServer{seen: map[string]mcp.Meta{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "meta", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	srv.AddTool(&mcp.Tool{Name: "meta", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ms.keep("tools/call", req.Params.Meta)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "broken", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("broken backend")
	})
	srv.AddTool(&mcp.Tool{Name: "loud", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("<script>" + strings.Repeat("€", 100_000))
	})
	srv.AddTool(&mcp.Tool{Name: "fail", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}}, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "hello"}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		ms.keep("prompts/get", req.Params.Meta)
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "meta://doc", Name: "doc"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		ms.keep("resources/read", req.Params.Meta)
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "meta://doc", Text: "doc"}}}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	ms.url = hs.URL
	return ms
}

// tracedHost starts a Host on a metaServer with an audit hook, and makes a
// recording tracer provider the global one for the test (as an embedder
// that traces does).
func tracedHost(t *testing.T, extra string) (*host.Host, *metaServer, *tracetest.SpanRecorder, func() []host.AuditRecord) {
	ms := startMetaServer(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	old := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(old)
		tp.Shutdown(context.Background())
	})
	cfg, err := config.Parse([]byte("[servers.srv]\nurl = \""+ms.url+"\"\n"+extra), &config.Options{Name: "test.toml"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var records []host.AuditRecord
	h, err := host.New(context.Background(), cfg, &host.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Name: "host", Output: testWriter{t}, Level: hclog.Info}),
		Audit: func(r host.AuditRecord) {
			mu.Lock()
			records = append(records, r)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, ms, rec, func() []host.AuditRecord {
		mu.Lock()
		defer mu.Unlock()
		return append([]host.AuditRecord(nil), records...)
	}
}

func attrsOf(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

func spanNamed(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range rec.Ended() {
			names = append(names, s.Name())
		}
		t.Fatalf("%d spans named %q; spans: %v", len(found), name, names)
	}
	return found[0]
}

// TestTraceEmbedderSpan: an embedder's span in the context is the parent
// of each call's span (tools/call, prompts/get, resources/read), which
// carries the MCP and GenAI semantic-convention attributes and the
// outcome; the audit record has the trace id; the request to the MCP
// server carries the call span's traceparent in _meta, so that a traced
// server continues the trace.
func TestTraceEmbedderSpan(t *testing.T) {
	h, ms, rec, records := tracedHost(t, "")
	ctx, parent := otel.Tracer("embedder").Start(context.Background(), "agent step")
	tid := parent.SpanContext().TraceID()

	if res, err := h.CallTool(host.WithClient(ctx, "alice"), "srv__meta", map[string]any{}); err != nil || res.IsError {
		t.Fatal(err, res)
	}
	if _, err := h.CallTool(ctx, "srv__fail", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CallTool(ctx, "srv__nope", map[string]any{}); err == nil {
		t.Fatal("unknown tool called")
	}
	if _, err := h.GetPrompt(ctx, "srv__hello", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ReadResource(ctx, "srv", "meta://doc"); err != nil {
		t.Fatal(err)
	}
	parent.End()

	call := spanNamed(t, rec, "tools/call srv__meta")
	if call.Parent().SpanID() != parent.SpanContext().SpanID() || call.SpanContext().TraceID() != tid || call.SpanKind() != trace.SpanKindClient {
		t.Errorf("call span: parent %v, trace %v, kind %v", call.Parent().SpanID(), call.SpanContext().TraceID(), call.SpanKind())
	}
	want := map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "srv__meta",
		"toolhost.backend": "srv", "toolhost.outcome": "ok", "toolhost.client": "alice",
	}
	got := attrsOf(call)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("call span %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if _, ok := got["error.type"]; ok || call.Status().Code == codes.Error {
		t.Errorf("ok call has error.type or an error status: %v %v", got, call.Status())
	}
	tp, _ := ms.meta("tools/call")["traceparent"].(string)
	if wantTP := "00-" + tid.String() + "-" + call.SpanContext().SpanID().String() + "-01"; tp != wantTP {
		t.Errorf("server got _meta.traceparent %q, want %q", tp, wantTP)
	}
	for _, m := range []string{"prompts/get", "resources/read"} {
		if tp, _ := ms.meta(m)["traceparent"].(string); !strings.Contains(tp, tid.String()) {
			t.Errorf("%s: server got _meta %v", m, ms.meta(m))
		}
	}

	fail := attrsOf(spanNamed(t, rec, "tools/call srv__fail"))
	if fail["error.type"] != host.OutcomeToolError || fail["toolhost.outcome"] != host.OutcomeToolError {
		t.Errorf("isError call: %v", fail)
	}
	unknown := spanNamed(t, rec, "tools/call srv__nope")
	if a := attrsOf(unknown); a["error.type"] != host.OutcomeUnknownTool || a["toolhost.backend"] != "" || unknown.Status().Code != codes.Error || !strings.Contains(unknown.Status().Description, "srv__nope") {
		t.Errorf("unknown tool: %v %v", a, unknown.Status())
	}
	prompt := attrsOf(spanNamed(t, rec, "prompts/get srv__hello"))
	if prompt["gen_ai.prompt.name"] != "srv__hello" || prompt["mcp.method.name"] != "prompts/get" || prompt["toolhost.outcome"] != "ok" {
		t.Errorf("prompt span: %v", prompt)
	}
	res := attrsOf(spanNamed(t, rec, "resources/read"))
	if res["mcp.resource.uri"] != "meta://doc" || res["toolhost.backend"] != "srv" {
		t.Errorf("resource span: %v", res)
	}

	rs := records()
	if len(rs) != 5 {
		t.Fatalf("%d audit records", len(rs))
	}
	for _, r := range rs {
		if r.TraceID != tid.String() {
			t.Errorf("audit record of %s%s%s: trace_id %q, want %q", r.Tool, r.Prompt, r.URI, r.TraceID, tid)
		}
	}
}

// TestTraceOff: without a span in the context and without toolhost's
// tracer provider (no OTEL_EXPORTER_OTLP_* set), a call makes no span,
// sends no traceparent and its audit record has no trace id.
func TestTraceOff(t *testing.T) {
	h, ms, rec, records := tracedHost(t, "")
	if _, err := h.CallTool(context.Background(), "srv__meta", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("%d spans", n)
	}
	if m := ms.meta("tools/call"); m["traceparent"] != nil {
		t.Errorf("server got _meta %v", m)
	}
	if rs := records(); len(rs) != 1 || rs[0].TraceID != "" {
		t.Errorf("records %+v", rs)
	}
}

// TestTraceFallback: a call whose backend fails and falls back to its
// [tools.NAME] fallback has its own outcome on its span and names the
// fallback; the fallback's span is its child and names the tool it
// stands in for.
func TestTraceFallback(t *testing.T) {
	h, _, rec, _ := tracedHost(t, "\n[tools.srv__broken]\nfallback = \"srv__meta\"\n")
	ctx, parent := otel.Tracer("embedder").Start(context.Background(), "agent step")
	if res, err := h.CallTool(ctx, "srv__broken", map[string]any{}); err != nil || res.IsError {
		t.Fatal(err, res)
	}
	parent.End()
	broken := spanNamed(t, rec, "tools/call srv__broken")
	fb := spanNamed(t, rec, "tools/call srv__meta")
	if a := attrsOf(broken); a["toolhost.fallback"] != "srv__meta" || a["error.type"] != host.OutcomeBackendError || !strings.Contains(broken.Status().Description, "broken backend") {
		t.Errorf("failed call's span: %v %v", a, broken.Status())
	}
	if a := attrsOf(fb); a["toolhost.fallback_for"] != "srv__broken" || a["toolhost.outcome"] != "ok" || fb.Parent().SpanID() != broken.SpanContext().SpanID() {
		t.Errorf("fallback's span: %v, parent %v", a, fb.Parent().SpanID())
	}
}

// TestTraceHostileError: a backend's huge error message is clipped in the
// span's status (512 bytes) and stays valid UTF-8 (OTLP's protobuf would
// refuse the whole batch otherwise), even when the cut falls in a rune.
func TestTraceHostileError(t *testing.T) {
	h, _, rec, _ := tracedHost(t, "")
	ctx, parent := otel.Tracer("embedder").Start(context.Background(), "agent step")
	if _, err := h.CallTool(ctx, "srv__loud", map[string]any{}); err == nil {
		t.Fatal("no error")
	}
	parent.End()
	st := spanNamed(t, rec, "tools/call srv__loud").Status()
	if st.Code != codes.Error || len(st.Description) > 512 || !utf8.ValidString(st.Description) || !strings.Contains(st.Description, "<script>") {
		t.Errorf("status %d bytes, valid UTF-8 %v: %.80q", len(st.Description), utf8.ValidString(st.Description), st.Description)
	}
}
