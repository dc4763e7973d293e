package host

import (
	"context"
	"errors"
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

// refPrompt and refResource are the reference types of completion/complete
// (MCP 2025-11-25 server/utilities/completion).
const (
	refPrompt   = "ref/prompt"
	refResource = "ref/resource"
)

func (h *Host) templates(ctx context.Context, profile string) ([]ResourceTemplate, error) {
	if h.isClosed() {
		return nil, ErrClosed
	}
	var out []ResourceTemplate
	for _, b := range h.readyBackends() {
		res, err := h.pipe.list(ctx, listOp(methodListTemplates, profile, b))
		if err != nil {
			if !errors.Is(err, transport.ErrUnsupported) {
				b.logger.Warn("resources/templates/list failed", "error", err)
			}
			continue
		}
		for _, t := range res.([]*mcp.ResourceTemplate) {
			if t != nil {
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
// as a resource template or a resource, asked through the pipeline's lower
// part (deadline, retry, transport).
func (h *Host) resourceBackend(ctx context.Context, uri string) *backend {
	bs := h.readyBackends()
	sort.Slice(bs, func(i, j int) bool { return bs[i].name < bs[j].name })
	for _, b := range bs {
		if ts, err := h.pipe.send(ctx, listOp(methodListTemplates, "", b)); err == nil {
			for _, t := range ts.([]*mcp.ResourceTemplate) {
				if t != nil && t.URITemplate == uri {
					return b
				}
			}
		}
		if rs, err := h.pipe.send(ctx, listOp(methodListResources, "", b)); err == nil {
			for _, r := range rs.([]*mcp.Resource) {
				if r != nil && r.URI == uri {
					return b
				}
			}
		}
	}
	return nil
}

// complete runs a completion/complete through the pipeline: resolve finds
// the backend of its ref (the prompt's, or the one listing the URI), policy
// decides it as a prompts/get or a resources/read, audit records it (Op
// OpComplete).
func (h *Host) complete(ctx context.Context, profile string, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if h.isClosed() {
		return nil, ErrClosed
	}
	if params == nil {
		params = &mcp.CompleteParams{}
	}
	o := &op{req: request{method: methodComplete, profile: profile, complete: params}}
	if ref := params.Ref; ref != nil {
		o.req.name = ref.Name
		if ref.Type == refResource {
			o.req.name = ref.URI
		}
	}
	res, err := h.runItem(ctx, o)
	if err != nil {
		return nil, err
	}
	return res.(*mcp.CompleteResult), nil
}
