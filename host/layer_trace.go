package host

import (
	"context"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/otelx"
	"github.com/toolhost/toolhost/internal/redact"
)

// Span attributes of an op (OpenTelemetry semantic conventions for MCP and
// for GenAI tool execution, v1.37+), and toolhost's own under "toolhost.".
const (
	attrMethod      = "mcp.method.name"       // tools/call, prompts/get, resources/read, completion/complete
	attrSession     = "mcp.session.id"        // the gateway client's session, when known
	attrURI         = "mcp.resource.uri"      // resources/read
	attrOperation   = "gen_ai.operation.name" // "execute_tool" for tools/call
	attrTool        = "gen_ai.tool.name"      // the catalogue name as called
	attrPrompt      = "gen_ai.prompt.name"    // prompts/get
	attrErrorType   = "error.type"            // the Outcome constant when it is not "ok"
	attrBackend     = "toolhost.backend"      // the backend the op went to (none for an unknown tool)
	attrProfile     = "toolhost.profile"      // the view's profile, when not the Host's own
	attrClient      = "toolhost.client"       // the gateway client (WithClient)
	attrOutcome     = "toolhost.outcome"      // the Outcome constant, "ok" included
	attrRetries     = "toolhost.retries"      // resends, when any
	attrFallback    = "toolhost.fallback"     // the tool a failed call fell back to
	attrFallbackFor = "toolhost.fallback_for" // on a fallback's span: the tool it stands in for
	opExecuteTool   = "execute_tool"
	maxStatusText   = 512  // bytes of the error message kept in the span's status
	maxURI          = 1024 // bytes of a resource's URI kept in mcp.resource.uri
)

// traceLayer gives each tools/call, prompts/get, resources/read and
// completion/complete an OpenTelemetry span (kind client: the host is the
// MCP client of the backend), named "METHOD NAME" ("tools/call
// fs__read_file"; a resource's URI is an attribute, not part of the name),
// ended when the op returns whatever layer ended it. Its parent is the
// span of ctx: an embedder's, or the client's traceparent the gateway took
// from the request's _meta (otelx.FromMeta). The layer is on when
// toolhost's tracer provider is (otelx.Setup found OTEL_EXPORTER_OTLP_*),
// or when ctx already carries a span (an embedder traces with its own
// provider, set as the global one); otherwise it passes the op on at the
// cost of an atomic load and a context lookup, without allocating. It
// comes first so that the audit record below carries the span's trace id
// and the transport sends its traceparent to the backend.
func traceLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		if !otelx.Enabled() && !trace.SpanContextFromContext(ctx).IsValid() {
			return next(ctx, o)
		}
		name, attrs := spanStart(ctx, o)
		ctx, span := otelx.Tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
		res, err := next(ctx, o)
		if span.IsRecording() {
			h.spanEnd(span, o, res, err)
		}
		span.End()
		return res, err
	}
}

// spanStart returns the name and the first attributes of o's span (those
// known before it runs, so that a sampler sees them).
func spanStart(ctx context.Context, o *op) (string, []attribute.KeyValue) {
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, attribute.String(attrMethod, o.req.method))
	name := o.req.method
	switch {
	case o.req.method == methodCallTool:
		name += " " + o.req.name
		attrs = append(attrs, attribute.String(attrOperation, opExecuteTool), attribute.String(attrTool, o.req.name))
		if o.req.fallbackFor != "" {
			attrs = append(attrs, attribute.String(attrFallbackFor, o.req.fallbackFor))
		}
	case o.req.method == methodGetPrompt:
		name += " " + o.req.name
		attrs = append(attrs, attribute.String(attrPrompt, o.req.name))
	case o.req.method == methodReadResource:
		attrs = append(attrs, attribute.String(attrURI, clipUTF8(o.req.name, maxURI)))
	}
	if s := otelx.Session(ctx); s != "" {
		attrs = append(attrs, attribute.String(attrSession, s))
	}
	if o.req.profile != "" {
		attrs = append(attrs, attribute.String(attrProfile, o.req.profile))
	}
	if c := clientOf(ctx); c != "" {
		attrs = append(attrs, attribute.String(attrClient, c))
	}
	return name, attrs
}

// spanEnd notes on span what the layers found out: the backend, the
// outcome (as the audit record says it: Outcome constants, the call's own
// when it fell back), retries, and the error (redacted as the audit
// record's is, and clipped).
func (h *Host) spanEnd(span trace.Span, o *op, res any, err error) {
	var outcome string
	var named error
	if o.out.fallback != "" {
		named = o.nameError(o.out.primaryErr)
		outcome = outcomeOf(nil, named, "")
		span.SetAttributes(attribute.String(attrFallback, o.out.fallback))
	} else {
		named = o.named(err)
		tr, _ := res.(*mcp.CallToolResult)
		outcome = outcomeOf(tr, named, o.out.invalid)
	}
	span.SetAttributes(attribute.String(attrOutcome, outcome))
	if o.dst.backend != "" {
		span.SetAttributes(attribute.String(attrBackend, o.dst.backend))
	}
	if o.out.retries > 0 {
		span.SetAttributes(attribute.Int(attrRetries, o.out.retries))
	}
	if outcome == OutcomeOK {
		return
	}
	span.SetAttributes(attribute.String(attrErrorType, outcome))
	msg := outcome
	switch {
	case o.out.invalid != "":
		msg = o.out.invalid
	case named != nil:
		msg = named.Error()
	}
	if h.audit != nil && h.audit.scrub != nil {
		msg = h.audit.scrub.Replace(msg)
	}
	span.SetStatus(codes.Error, clipUTF8(redact.Text(msg), maxStatusText))
}

// clipUTF8 returns s cut to at most n bytes, at a rune's start, and made
// valid UTF-8 (OTLP's protobuf refuses a string that is not, and would
// drop the whole batch).
func clipUTF8(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return s
}
