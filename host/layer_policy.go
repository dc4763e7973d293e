package host

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// policyLayer applies [policy] and the caller's profile: a tool, prompt or
// resource they exclude is refused (a *ToolNotAllowedError, or a
// *NotAllowedError for prompts and resources) before the backend is asked,
// and the decision is noted in the audit record; while a backend the
// profile requires is down, the op fails with ErrRequiredBackend. A list is
// filtered on the way back: only what the caller may see is returned.
func policyLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		method := o.method
		if method == methodComplete {
			// A completion is decided as what its ref names: a prompt
			// (by name) or a resource (by backend and URI or template).
			method = methodReadResource
			if o.complete.Ref.Type == refPrompt {
				method = methodGetPrompt
			}
		}
		switch method {
		case methodCallTool:
			d := o.vw.decisions[o.name]
			if decided(o.rec, d, o.b.name, nil); !d.Allowed {
				return nil, &ToolNotAllowedError{Name: o.name, Profile: o.profile, Rule: d.Rule}
			}
			if prof := o.vw.prof; prof != nil {
				for _, r := range prof.Requires {
					if down, lastErr := h.named(r).down(); down {
						return nil, fmt.Errorf("%s: %w: profile %q requires backend %q, which is not ready; try again once it is: %w", o.name, ErrRequiredBackend, o.profile, r, lastErr)
					}
				}
			}
			return next(ctx, o)
		case methodGetPrompt:
			d := DecidePrompt(&h.config().Policy, h.profileOf(o.profile), o.name)
			if err := decided(o.rec, d, o.backend, &NotAllowedError{Kind: "prompt", Name: o.name, Profile: o.profile, Rule: d.Rule}); err != nil {
				return nil, err
			}
			if err := h.required(o.profile, o.name); err != nil {
				return nil, err
			}
			return next(ctx, o)
		case methodReadResource:
			d := DecideResource(&h.config().Policy, h.profileOf(o.profile), o.backend, o.name)
			if err := decided(o.rec, d, o.backend, &NotAllowedError{Kind: "resource", Name: o.name, Backend: o.backend, Profile: o.profile, Rule: d.Rule}); err != nil {
				return nil, err
			}
			if err := h.required(o.profile, o.name); err != nil {
				return nil, err
			}
			return next(ctx, o)
		}
		res, err := next(ctx, o)
		if err != nil {
			return nil, err
		}
		pol, prof := &h.config().Policy, h.profileOf(o.profile)
		switch list := res.(type) {
		case []*mcp.Prompt:
			return allowed(list, func(p *mcp.Prompt) bool {
				return DecidePrompt(pol, prof, catalogueName(o.b.prefix, p.Name)).Allowed
			}), nil
		case []*mcp.Resource:
			return allowed(list, func(r *mcp.Resource) bool { return DecideResource(pol, prof, o.b.name, r.URI).Allowed }), nil
		case []*mcp.ResourceTemplate:
			return allowed(list, func(t *mcp.ResourceTemplate) bool {
				return DecideResource(pol, prof, o.b.name, t.URITemplate).Allowed
			}), nil
		}
		return res, nil
	}
}

// allowed returns the items of list that keep reports true for, in order,
// in a new slice (list, a backend's answer, is left as it is).
func allowed[T any](list []T, keep func(T) bool) []T {
	out := list[:0:0]
	for _, v := range list {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}
