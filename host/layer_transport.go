package host

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/transport"
)

// transportLayer is the bottom of the pipeline: it waits (within ctx) for
// the op's backend to be ready, starting it if idle (backend.conn), sends
// the op on its transport, and reports the outcome to the backend's
// supervisor (backend.release: a lost connection, a fault). A tool call
// made while Options.Elicit or Options.Sample is set carries its CallInfo,
// so that a server's request during the call names it.
func (h *Host) transportLayer(ctx context.Context, o *op) (any, error) {
	b := o.b
	tr, gen, err := b.conn(ctx)
	o.noRetry = err != nil
	if err != nil {
		return nil, err
	}
	var res any
	switch {
	case o.method == methodCallTool:
		if h.opts.Elicit != nil || h.opts.Sample != nil || h.opts.ListRoots != nil {
			ctx = withCall(ctx, &CallInfo{Tool: o.name, Profile: o.profile, Client: clientOf(ctx)})
		}
		var r *mcp.CallToolResult
		r, o.size, err = callSized(ctx, tr, &mcp.CallToolParams{Name: o.target, Arguments: json.RawMessage(o.raw)}, b.maxOutput > 0 || o.rec != nil)
		res = r
	case o.method == methodGetPrompt:
		res, err = tr.GetPrompt(ctx, &mcp.GetPromptParams{Name: o.target, Arguments: o.promptArgs})
	case o.method == methodReadResource:
		res, err = tr.ReadResource(ctx, &mcp.ReadResourceParams{URI: o.name})
	case o.method == methodListPrompts:
		res, err = tr.ListPrompts(ctx)
	case o.method == methodListResources:
		res, err = tr.ListResources(ctx)
	case o.method == methodListTemplates:
		tl, ok := tr.(transport.TemplateLister)
		if !ok {
			err = fmt.Errorf("%s: %w", o.method, transport.ErrUnsupported)
			break
		}
		res, err = tl.ListResourceTemplates(ctx)
	case o.method == methodComplete:
		c, ok := tr.(transport.Completer)
		if !ok {
			err = fmt.Errorf("%s: %w", o.method, transport.ErrUnsupported)
			break
		}
		fwd, ref := *o.complete, *o.complete.Ref
		if ref.Type == refPrompt {
			ref.Name = o.target // the backend's own prompt name
		}
		fwd.Ref = &ref
		res, err = c.Complete(ctx, &fwd)
	default:
		err = fmt.Errorf("%w: %s", transport.ErrUnsupported, o.method)
	}
	return res, b.release(gen, err)
}

// callSized calls the tool p.Name on tr and returns its result with size,
// the length in bytes of the result's JSON text. A Transport that implements
// transport.SizedCaller (a plugin) reports the size of the text it decoded;
// for any other, the result is encoded with encoding/json to measure it, and
// only when need is true (size is 0 otherwise). A result that cannot be
// encoded is an error.
func callSized(ctx context.Context, tr transport.Transport, p *mcp.CallToolParams, need bool) (res *mcp.CallToolResult, size int, err error) {
	if sc, ok := tr.(transport.SizedCaller); ok {
		return sc.CallToolSized(ctx, p)
	}
	res, err = tr.CallTool(ctx, p)
	if err != nil || !need {
		return res, 0, err
	}
	enc, err := json.Marshal(res)
	if err != nil {
		return nil, 0, fmt.Errorf("encoding the result: %w", err)
	}
	return res, len(enc), nil
}
