package host

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
)

// auditCallLayer begins the audit record of a tools/call (when auditing is
// on: [host] audit_log or Options.Audit) and writes it when the call
// returns, whatever layer ended it: a refused call is audited like one that
// ran. It comes first so that it sees every refusal; the record is made of
// what the layers below found out (the op's destination and outcome). The
// call's arguments are decoded here, up front, so that every record
// (denied and unknown-tool calls too) carries their hash and redacted copy.
// A call on a closed Host, or in the view of a profile Host.Apply removed,
// is refused by its caller before a record begins.
func auditCallLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (res any, err error) {
		if !h.audit.enabled() {
			return next(ctx, o)
		}
		rec, start := h.beginRecord(ctx, o)
		rec.Tool, rec.FallbackFor = o.req.name, o.req.fallbackFor
		if v, verr := o.req.args.value(); verr == nil {
			raw, _ := o.req.args.text()
			canonical, redacted := canonicalArgs(v, h.audit, len(raw))
			rec.ArgsHMAC, rec.Args = h.audit.hashArgs(canonical), redacted
		}
		defer func() {
			o.endRecord(rec, start)
			rec.Retries = o.out.retries
			if o.out.argsRefused {
				// Not a JSON object: the hash of the text as given.
				raw, _ := o.req.args.text()
				rec.ArgsHMAC = h.audit.hashArgs(raw)
			}
			if o.out.fallback != "" {
				// This call's own outcome; the fallback has its record.
				rec.Fallback = o.out.fallback
				h.finish(rec, nil, o.nameError(o.out.primaryErr), "")
				copyCallRecord(ctx, rec)
				return
			}
			rec.ResultBytes = o.out.size
			tr, _ := res.(*mcp.CallToolResult)
			h.finish(rec, tr, o.named(err), o.out.invalid)
			copyCallRecord(ctx, rec)
		}()
		return next(ctx, o)
	}
}

// auditItemLayer is auditCallLayer for a prompts/get, resources/read or
// completion/complete (AuditRecord.Op): the record names the prompt
// (Prompt) or the resource (URI), and a prompt's arguments are hashed and
// redacted like a tool's.
func auditItemLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (res any, err error) {
		if !h.audit.enabled() {
			return next(ctx, o)
		}
		rec, start := h.beginRecord(ctx, o)
		rec.Op = o.req.method
		switch o.req.subject() {
		case itemPrompt:
			rec.Prompt = o.req.name
		case itemResource:
			rec.URI = o.req.name
		}
		if o.req.method == methodGetPrompt {
			obj := make(map[string]any, len(o.req.promptArgs))
			for k, v := range o.req.promptArgs {
				obj[k] = v
			}
			canonical, redacted := canonicalArgs(obj, h.audit, 64)
			rec.ArgsHMAC, rec.Args = h.audit.hashArgs(canonical), redacted
		}
		defer func() {
			o.endRecord(rec, start)
			h.finish(rec, nil, o.named(err), "")
		}()
		return next(ctx, o)
	}
}

// beginRecord begins the audit record of o in o's storage, and returns it
// with the time it began.
func (h *Host) beginRecord(ctx context.Context, o *op) (*AuditRecord, time.Time) {
	start := time.Now()
	o.out.record = AuditRecord{Time: start.UTC(), Profile: o.req.profile, Client: clientOf(ctx), Decision: "none",
		CorrelationID: correlationOf(ctx), Parent: parentOf(ctx)}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		o.out.record.TraceID = sc.TraceID().String()
	}
	return &o.out.record, start
}

// endRecord notes in rec what the layers below decided: the backend (the
// one decided on, or the one a tool call waited for in vain), the policy's
// decision and its rule, and the latency since start.
func (o *op) endRecord(rec *AuditRecord, start time.Time) {
	rec.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	rec.Backend = o.dst.backend
	if o.out.decided {
		rec.Rule, rec.Decision = o.out.decision.Rule, "deny"
		if o.out.decision.Allowed {
			rec.Decision = "allow"
		}
	}
}
