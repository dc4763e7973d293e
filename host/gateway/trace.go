package gateway

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/otelx"
)

// traced returns ctx carrying what the host's span of a client's request
// needs (host/layer_trace.go), when tracing is on: the W3C trace context
// the client sent in the request's _meta (traceparent, tracestate: the
// OpenTelemetry semantic conventions for MCP), which becomes the span's
// parent unless ctx already has a span, and the MCP session's id
// (mcp.session.id). A malformed or oversized traceparent is ignored (the
// call starts a new trace): see otelx.FromMeta. When tracing is off ctx is
// returned as it is.
func traced(ctx context.Context, meta mcp.Meta, ss *mcp.ServerSession) context.Context {
	if !otelx.Enabled() {
		return ctx
	}
	ctx = otelx.FromMeta(ctx, meta)
	if ss != nil {
		ctx = otelx.WithSession(ctx, ss.ID())
	}
	return ctx
}

// tracedHTTP is traced for a REST request: the W3C trace context is in its
// traceparent and tracestate headers (W3C Trace Context, section 3), with
// the same bounds.
func tracedHTTP(r *http.Request) context.Context {
	if !otelx.Enabled() {
		return r.Context()
	}
	meta := map[string]any{}
	for _, k := range []string{otelx.MetaTraceParent, otelx.MetaTraceState} {
		if v := r.Header.Values(k); len(v) == 1 {
			meta[k] = v[0]
		}
	}
	return otelx.FromMeta(r.Context(), meta)
}
