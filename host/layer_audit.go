package host

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// auditLayer begins the audit record of a tools/call, prompts/get or
// resources/read (when auditing is on: [host] audit_log or Options.Audit)
// and writes it when the operation returns, whatever layer ended it: a
// refused call is audited like one that ran. It comes first so that it sees
// every refusal; each layer below notes what it decided in o.rec. A tool
// call's arguments are decoded here once, up front, so that every record
// (denied and unknown-tool calls too) carries their hash and redacted copy.
// Lists are not audited. A tools/call on a closed Host, or in the view of a
// profile Host.Apply removed, is refused before a record begins.
func auditLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (res any, err error) {
		if o.method == methodCallTool {
			h.mu.RLock()
			o.vw = h.views[o.profile]
			closed := h.closed
			h.mu.RUnlock()
			if closed {
				return nil, ErrClosed
			}
			if o.vw == nil {
				return nil, profileRemoved(o.profile)
			}
		}
		if !h.audit.enabled() || o.method == methodListPrompts || o.method == methodListResources || o.method == methodListTemplates {
			return next(ctx, o)
		}
		start := time.Now()
		o.recBuf = AuditRecord{Time: start.UTC(), Profile: o.profile, Client: clientOf(ctx), Decision: "none"}
		rec := &o.recBuf
		o.rec = rec
		switch o.method {
		case methodCallTool:
			rec.Tool, rec.FallbackFor = o.name, o.fallbackFor
			o.raw, o.argErr = argsJSON(o.args, true)
			if o.argErr == nil {
				o.argErr = o.decode(h)
			}
		case methodGetPrompt:
			rec.Op, rec.Prompt = o.method, o.name
			obj := make(map[string]any, len(o.promptArgs))
			for k, v := range o.promptArgs {
				obj[k] = v
			}
			canonical, redacted := canonicalArgs(obj, h.audit, 64)
			rec.ArgsHMAC, rec.Args = h.audit.hashArgs(canonical), redacted
		case methodReadResource:
			rec.Op, rec.URI = o.method, o.name
		case methodComplete:
			rec.Op = o.method
			switch ref := o.complete.Ref; {
			case ref == nil:
			case ref.Type == refPrompt:
				rec.Prompt = o.name
			case ref.Type == refResource:
				rec.URI = o.name
			}
		default:
			rec.Op = o.method
		}
		defer func() {
			rec.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
			if o.fellBack {
				// This call's own outcome; the fallback has its record.
				h.finish(rec, nil, o.primaryErr, "")
				return
			}
			tr, _ := res.(*mcp.CallToolResult)
			h.finish(rec, tr, err, o.invalid)
		}()
		return next(ctx, o)
	}
}

// decode decodes a tools/call's arguments (o.raw) once, noting their hash
// and redacted copy in the audit record.
func (o *op) decode(h *Host) error {
	if o.decoded {
		return nil
	}
	v, derr := decodeJSON(o.raw)
	if derr != nil {
		return argsError(o.args, derr)
	}
	o.val, o.decoded = v, true
	if o.rec != nil {
		canonical, redactedArgs := canonicalArgs(o.val, h.audit, len(o.raw))
		o.rec.ArgsHMAC, o.rec.Args = h.audit.hashArgs(canonical), redactedArgs
	}
	return nil
}
