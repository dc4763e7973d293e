package host

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
)

// policyCallLayer applies [policy] and the caller's profile to a
// tools/call: a tool they exclude is refused with a *ToolNotAllowedError
// before the backend is asked; while a backend the profile requires is
// down, the call fails with ErrRequiredBackend; a tool disabled at run
// time (Host.DisableTool) is refused with a *ToolDisabledError, decided
// "deny" by rule "disabled". Its decision is the op's
// outcome (for the audit record).
func policyCallLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		d := o.dst.view.decisions[o.req.name]
		o.out.decided, o.out.decision = true, d
		if !d.Allowed {
			return nil, &ToolNotAllowedError{Name: o.req.name, Profile: o.req.profile, Rule: d.Rule}
		}
		if h.toolOff(o.req.name) {
			// Disabled at run time (Host.DisableTool): a refusal.
			o.out.decision = Decision{Rule: "disabled"}
			return nil, &ToolDisabledError{Name: o.req.name}
		}
		if prof := o.dst.view.prof; prof != nil {
			if err := h.requiredDown(o.req.profile, prof); err != nil {
				return nil, err
			}
		}
		return next(ctx, o)
	}
}

// policyItemLayer is policyCallLayer for a prompts/get, resources/read or
// completion/complete: a prompt (by catalogue name) or a resource (by
// backend and URI or template) the policy excludes is a *NotAllowedError.
// A completion is decided as what its ref names.
func policyItemLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		pol, prof := &h.config().Policy, h.profileOf(o.req.profile)
		var refusal *NotAllowedError
		switch o.req.subject() {
		case itemPrompt:
			o.out.decision = DecidePrompt(pol, prof, o.req.name)
			refusal = &NotAllowedError{Kind: "prompt", Name: o.req.name, Profile: o.req.profile, Rule: o.out.decision.Rule}
		case itemResource:
			o.out.decision = DecideResource(pol, prof, o.dst.backend, o.req.name)
			refusal = &NotAllowedError{Kind: "resource", Name: o.req.name, Backend: o.dst.backend, Profile: o.req.profile, Rule: o.out.decision.Rule}
		default:
			return next(ctx, o)
		}
		o.out.decided = true
		if !o.out.decision.Allowed {
			return nil, refusal
		}
		if prof != nil {
			if err := h.requiredDown(o.req.profile, prof); err != nil {
				return nil, err
			}
		}
		return next(ctx, o)
	}
}

// policyListLayer filters a list on the way back: only the prompts,
// resources or templates that the policy and the caller's profile allow
// are returned.
func policyListLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		res, err := next(ctx, o)
		if err != nil {
			return nil, err
		}
		pol, prof, b := &h.config().Policy, h.profileOf(o.req.profile), o.dst.b
		switch list := res.(type) {
		case []*mcp.Prompt:
			return allowed(list, func(p *mcp.Prompt) bool {
				return DecidePrompt(pol, prof, catalogueName(b.prefix, p.Name)).Allowed
			}), nil
		case []*mcp.Resource:
			return allowed(list, func(r *mcp.Resource) bool { return DecideResource(pol, prof, b.name, r.URI).Allowed }), nil
		case []*mcp.ResourceTemplate:
			return allowed(list, func(t *mcp.ResourceTemplate) bool {
				return DecideResource(pol, prof, b.name, t.URITemplate).Allowed
			}), nil
		}
		return res, nil
	}
}

// requiredDown returns an error wrapping ErrRequiredBackend while a
// backend the profile prof (of the view profile) requires is down, naming
// it and wrapping its last error; nil when all are up.
func (h *Host) requiredDown(profile string, prof *config.Profile) error {
	for _, r := range prof.Requires {
		if down, lastErr := h.named(r).down(); down {
			return fmt.Errorf("%w: profile %q requires backend %q, which is not ready; try again once it is: %w", ErrRequiredBackend, profile, r, lastErr)
		}
	}
	return nil
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
