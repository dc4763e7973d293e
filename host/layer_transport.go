package host

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/otelx"
	"github.com/toolhost/toolhost/transport"
)

// transportLayer is the bottom of the item and list pipelines (and of
// h.pipe.send): it waits (within ctx) for the op's backend to be ready,
// starting it if idle (backend.conn), sends the op on its transport by
// method, and reports the outcome to the backend's supervisor
// (backend.release: a lost connection, a fault).
func (h *Host) transportLayer(ctx context.Context, o *op) (any, error) {
	b := o.dst.b
	tr, gen, err := b.conn(ctx)
	o.out.noRetry = err != nil
	if err != nil {
		return nil, err
	}
	var res any
	switch o.req.method {
	case methodGetPrompt:
		res, err = tr.GetPrompt(ctx, &mcp.GetPromptParams{Meta: otelx.ToMeta(ctx, nil), Name: o.dst.target, Arguments: o.req.promptArgs})
	case methodReadResource:
		res, err = tr.ReadResource(ctx, &mcp.ReadResourceParams{Meta: otelx.ToMeta(ctx, nil), URI: o.req.name})
	case methodListPrompts:
		res, err = tr.ListPrompts(ctx)
	case methodListResources:
		res, err = tr.ListResources(ctx)
	case methodListTemplates:
		tl, ok := tr.(transport.TemplateLister)
		if !ok {
			err = fmt.Errorf("%s: %w", o.req.method, transport.ErrUnsupported)
			break
		}
		res, err = tl.ListResourceTemplates(ctx)
	case methodComplete:
		c, ok := tr.(transport.Completer)
		if !ok {
			err = fmt.Errorf("%s: %w", o.req.method, transport.ErrUnsupported)
			break
		}
		fwd, ref := *o.req.complete, *o.req.complete.Ref
		if ref.Type == refPrompt {
			ref.Name = o.dst.target // the backend's own prompt name
		}
		fwd.Ref = &ref
		res, err = c.Complete(ctx, &fwd)
	default:
		err = fmt.Errorf("%w: %s", transport.ErrUnsupported, o.req.method)
	}
	return res, b.release(gen, err)
}

// transportCallLayer is transportLayer for a tools/call: it sends the
// call's arguments (their text, args.go) to the tool's own name on its
// backend, and notes the result's size in the op's outcome when it
// succeeded. A call made while Options.Elicit, Options.Sample or
// Options.ListRoots is set carries its CallInfo, so that a server's
// request during the call names it. A result's _meta key
// "io.toolhost/error" (MetaErrorKind) is the host's own: a backend's is
// dropped.
func (h *Host) transportCallLayer(ctx context.Context, o *op) (any, error) {
	b := o.dst.b
	tr, gen, err := b.conn(ctx)
	o.out.noRetry = err != nil
	if err != nil {
		return nil, err
	}
	if h.opts.Elicit != nil || h.opts.Sample != nil || h.opts.ListRoots != nil {
		ctx = withCall(ctx, &CallInfo{Tool: o.req.name, Profile: o.req.profile, Client: clientOf(ctx)})
	}
	raw, _ := o.req.args.text() // checked by validate
	p := &mcp.CallToolParams{Name: o.dst.target, Arguments: json.RawMessage(raw)}
	if m := otelx.ToMeta(ctx, nil); m != nil {
		// The call's span continues in a traced server (layer_trace.go).
		p.Meta = m
	}
	res, size, err := callSized(ctx, tr, p, b.maxOutput > 0 || h.audit.enabled())
	if err == nil {
		o.out.size = size
		res = withoutOwnMeta(res)
	}
	return res, b.release(gen, err)
}

// withoutOwnMeta returns res without a MetaErrorKind key in its _meta: a
// backend cannot pass its result off as one the host made (the REST API's
// status follows that key, host.ResultKind).
func withoutOwnMeta(res *mcp.CallToolResult) *mcp.CallToolResult {
	if res == nil {
		return nil
	}
	if _, forged := res.Meta[MetaErrorKind]; !forged {
		return res
	}
	cp := *res
	cp.Meta = mcp.Meta{}
	for k, v := range res.Meta {
		if k != MetaErrorKind {
			cp.Meta[k] = v
		}
	}
	return &cp
}

// callSized calls the tool p.Name on tr and returns its result with size,
// the length in bytes of the result's JSON text. A Transport that implements
// transport.SizedCaller (a plugin, a stdio server) reports the size of the text it decoded;
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
