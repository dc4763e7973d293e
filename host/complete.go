package host

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/transport"
)

// Resource templates and argument completion (MCP 2025-11-25
// server/resources "Resource Templates", server/utilities/completion) go
// through the same policy, profiles and audit as resources and prompts:
//
//   - a template is listed when the resource policy allows its URI
//     template, matched as "backend:uri-template" against the [policy] and
//     profile keys resources and deny_resources (a template
//     "file:///{path}" of backend fs is matched as "fs:file:///{path}");
//     a read of a URI made from a template is a resources/read, decided on
//     the concrete URI;
//   - completion/complete for a prompt reference is decided by the prompt
//     policy on the prompt's catalogue name, and for a resource reference by
//     the resource policy on "backend:uri"; it is audited (Op
//     OpComplete) like a read.
//
// Backends that cannot list templates or complete (Wasm plugins, servers
// without the resources or completions capability) contribute none, and a
// completion for their prompts is an error wrapping
// transport.ErrUnsupported.

// OpComplete is AuditRecord.Op of a completion/complete.
const OpComplete = "completion/complete"

// ResourceTemplate is one resource template with the backend that serves
// it. URI templates are not namespaced: they are the backend's own.
type ResourceTemplate struct {
	*mcp.ResourceTemplate
	Backend string
}

// ResourceTemplates returns the resource templates of every ready backend
// that the global policy allows, with their backend, sorted by URI template
// (then backend). A backend whose listing fails is skipped and logged.
func (h *Host) ResourceTemplates(ctx context.Context) ([]ResourceTemplate, error) {
	return h.templates(ctx, "")
}

// ResourceTemplates is Host.ResourceTemplates in the view's profile.
func (v *View) ResourceTemplates(ctx context.Context) ([]ResourceTemplate, error) {
	return v.h.templates(ctx, v.name)
}

// Complete answers completion/complete in the Host's own view. params.Ref
// is a "ref/prompt" with the prompt's catalogue name, or a "ref/resource"
// with a resource URI or URI template as the client saw it; the request
// reaches the backend with the backend's own prompt name. Errors: a nil or
// unknown reference type wraps ErrInvalidArguments; an unknown prompt
// wraps ErrUnknownTool; a URI no backend lists (as a resource or template)
// wraps ErrUnknownBackend; a refused one is a *NotAllowedError
// (ErrPromptNotAllowed, ErrResourceNotAllowed); a backend that cannot
// complete wraps transport.ErrUnsupported. Every attempt is audited (Op
// OpComplete).
func (h *Host) Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return h.complete(ctx, "", params)
}

// Complete is Host.Complete in the view's profile; while a backend the
// profile requires is down it fails with ErrRequiredBackend.
func (v *View) Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return v.h.complete(ctx, v.name, params)
}

func listTemplates(ctx context.Context, b *backend) ([]*mcp.ResourceTemplate, error) {
	var ts []*mcp.ResourceTemplate
	err := bounded(ctx, b, func(ctx context.Context, tr transport.Transport) (err error) {
		tl, ok := tr.(transport.TemplateLister)
		if !ok {
			return fmt.Errorf("resources/templates/list: %w", transport.ErrUnsupported)
		}
		ts, err = tl.ListResourceTemplates(ctx)
		return
	})
	return ts, err
}

func (h *Host) templates(ctx context.Context, profile string) ([]ResourceTemplate, error) {
	if h.isClosed() {
		return nil, ErrClosed
	}
	prof := h.profileOf(profile)
	var out []ResourceTemplate
	for _, b := range h.readyBackends() {
		ts, err := listTemplates(ctx, b)
		if err != nil {
			if !errors.Is(err, transport.ErrUnsupported) {
				b.logger.Warn("resources/templates/list failed", "error", err)
			}
			continue
		}
		for _, t := range ts {
			if t != nil && DecideResource(&h.config().Policy, prof, b.name, t.URITemplate).Allowed {
				out = append(out, ResourceTemplate{ResourceTemplate: t, Backend: b.name})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].URITemplate != out[j].URITemplate {
			return out[i].URITemplate < out[j].URITemplate
		}
		return out[i].Backend < out[j].Backend
	})
	return out, nil
}

// resourceBackend returns the first ready backend (by name) that lists uri
// as a resource or a resource template.
func (h *Host) resourceBackend(ctx context.Context, uri string) *backend {
	bs := h.readyBackends()
	sort.Slice(bs, func(i, j int) bool { return bs[i].name < bs[j].name })
	for _, b := range bs {
		if ts, err := listTemplates(ctx, b); err == nil {
			for _, t := range ts {
				if t != nil && t.URITemplate == uri {
					return b
				}
			}
		}
		var rs []*mcp.Resource
		if bounded(ctx, b, func(ctx context.Context, tr transport.Transport) (err error) { rs, err = tr.ListResources(ctx); return }) == nil {
			for _, r := range rs {
				if r != nil && r.URI == uri {
					return b
				}
			}
		}
	}
	return nil
}

func (h *Host) complete(ctx context.Context, profile string, params *mcp.CompleteParams) (res *mcp.CompleteResult, err error) {
	rec, done := h.audited(ctx, OpComplete, profile)
	defer func() { done(err) }()
	if h.isClosed() {
		return nil, ErrClosed
	}
	if params == nil || params.Ref == nil {
		return nil, fmt.Errorf("completion/complete: %w: no ref", ErrInvalidArguments)
	}
	fwd := *params
	ref := *params.Ref
	fwd.Ref = &ref
	var b *backend
	switch ref.Type {
	case "ref/prompt":
		if rec != nil {
			rec.Prompt = ref.Name
		}
		var found *Prompt
		for _, cand := range h.readyBackends() {
			var ps []*mcp.Prompt
			if bounded(ctx, cand, func(ctx context.Context, tr transport.Transport) (err error) { ps, err = tr.ListPrompts(ctx); return }) != nil {
				continue
			}
			for _, p := range ps {
				if p != nil && catalogueName(cand.prefix, p.Name) == ref.Name {
					found = &Prompt{Prompt: p, Backend: cand.name, BackendPrompt: p.Name}
				}
			}
		}
		if found == nil {
			return nil, fmt.Errorf("completion/complete: prompt %q: %w", ref.Name, ErrUnknownTool)
		}
		d := DecidePrompt(&h.config().Policy, h.profileOf(profile), ref.Name)
		if err := decided(rec, d, found.Backend, &NotAllowedError{Kind: "prompt", Name: ref.Name, Profile: profile, Rule: d.Rule}); err != nil {
			return nil, err
		}
		ref.Name = found.BackendPrompt
		b = h.named(found.Backend)
	case "ref/resource":
		if rec != nil {
			rec.URI = ref.URI
		}
		b = h.resourceBackend(ctx, ref.URI)
		if b == nil {
			return nil, fmt.Errorf("completion/complete: %w: no ready backend lists the resource or template %q", ErrUnknownBackend, ref.URI)
		}
		d := DecideResource(&h.config().Policy, h.profileOf(profile), b.name, ref.URI)
		if err := decided(rec, d, b.name, &NotAllowedError{Kind: "resource", Name: ref.URI, Backend: b.name, Profile: profile, Rule: d.Rule}); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("completion/complete: %w: ref type %q (want ref/prompt or ref/resource)", ErrInvalidArguments, ref.Type)
	}
	if err := h.required(profile, OpComplete); err != nil {
		return nil, err
	}
	err = bounded(ctx, b, func(ctx context.Context, tr transport.Transport) (err error) {
		c, ok := tr.(transport.Completer)
		if !ok {
			return fmt.Errorf("completion/complete: %w", transport.ErrUnsupported)
		}
		res, err = c.Complete(ctx, &fwd)
		return
	})
	if err != nil {
		return nil, fmt.Errorf("completion/complete on %s: %w", b.name, err)
	}
	return res, nil
}
