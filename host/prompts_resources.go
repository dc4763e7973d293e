package host

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/transport"
)

// Prompts and resources go through the same policy, profiles and audit as
// tools: a listing shows only what the view allows, and a prompts/get or
// resources/read outside it is refused without reaching the backend and
// recorded (AuditRecord.Op).

// DecidePrompt is Decide for the prompt catalogue name name, with the
// [policy] and profile keys prompts and deny_prompts and the policy's
// PromptsDefault.
func DecidePrompt(pol *config.Policy, prof *config.Profile, name string) Decision {
	var allow, deny []config.Rule
	if prof != nil {
		allow, deny = prof.PromptRules, prof.DenyPromptRules
	}
	return decide(pol.PromptRules, pol.DenyPromptRules, pol.PromptsDefault, prof, allow, deny, "prompts", name)
}

// DecideResource is Decide for the resource uri of backend, matched as
// "backend:uri" against the [policy] and profile keys resources and
// deny_resources, with the policy's ResourcesDefault.
func DecideResource(pol *config.Policy, prof *config.Profile, backend, uri string) Decision {
	var allow, deny []config.Rule
	if prof != nil {
		allow, deny = prof.ResourceRules, prof.DenyResourceRules
	}
	return decide(pol.ResourceRules, pol.DenyResourceRules, pol.ResourcesDefault, prof, allow, deny, "resources", backend+":"+uri)
}

// decide is the decision rule of Decide over one kind's lists: polAllow,
// polDeny and dflt from [policy]; profAllow and profDeny from the profile
// prof (nil for none), whose allow key is profKey. An empty dflt is "allow".
func decide(polAllow, polDeny []config.Rule, dflt string, prof *config.Profile, profAllow, profDeny []config.Rule, profKey, name string) Decision {
	deny := config.Best(polDeny, name)
	if d := config.Best(profDeny, name); d != nil && (deny == nil || d.Specificity > deny.Specificity) {
		deny = d
	}
	if deny != nil {
		return Decision{Rule: deny.String()}
	}
	allow := config.Best(polAllow, name)
	if allow == nil && dflt == config.PolicyDeny {
		return Decision{Rule: `policy.default "deny"`}
	}
	if prof != nil && len(profAllow) > 0 {
		pa := config.Best(profAllow, name)
		if pa == nil {
			return Decision{Rule: fmt.Sprintf("profiles.%s.%s (no glob matches)", prof.Name, profKey)}
		}
		if allow == nil || pa.Specificity > allow.Specificity {
			allow = pa
		}
	}
	if allow != nil {
		return Decision{Allowed: true, Rule: allow.String()}
	}
	return Decision{Allowed: true, Rule: `policy.default "allow"`}
}

// NotAllowedError is the error for a prompt or resource the policy excludes
// from the caller's view. It wraps ErrPromptNotAllowed or
// ErrResourceNotAllowed; the backend was not asked.
type NotAllowedError struct {
	Kind    string // "prompt" or "resource"
	Name    string // the prompt's catalogue name, or the resource's URI
	Backend string // the resource's backend ("" for a prompt)
	Profile string // "" for the Host's own view
	Rule    string // the rule that decided, as in Decision.Rule
}

func (e *NotAllowedError) Error() string {
	where := "the policy"
	if e.Profile != "" {
		where = fmt.Sprintf("profile %q", e.Profile)
	}
	what := fmt.Sprintf("prompt %q", e.Name)
	if e.Kind == "resource" {
		what = fmt.Sprintf("resource %q of backend %q", e.Name, e.Backend)
	}
	return fmt.Sprintf("%s is not allowed in %s (rule %s)", what, where, e.Rule)
}

func (e *NotAllowedError) Unwrap() error {
	if e.Kind == "resource" {
		return ErrResourceNotAllowed
	}
	return ErrPromptNotAllowed
}

// Prompts returns the prompts of every ready backend that the global policy
// allows, namespaced like tools and sorted by name. Backends without the
// prompts capability contribute none; a backend whose listing fails is
// skipped and logged.
func (h *Host) Prompts(ctx context.Context) ([]Prompt, error) { return h.prompts(ctx, "") }

// GetPrompt renders the namespaced prompt name with args, in the Host's own
// view. A prompt the policy excludes is a *NotAllowedError
// (ErrPromptNotAllowed); an unknown name wraps ErrUnknownTool; other errors
// are CallTool's. Every attempt is audited (Op "prompts/get").
func (h *Host) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	return h.getPrompt(ctx, "", name, args)
}

// Resources returns the resources of every ready backend that the global
// policy allows, with their backend, sorted by URI.
func (h *Host) Resources(ctx context.Context) ([]Resource, error) { return h.resources(ctx, "") }

// ReadResource reads uri from backend (a backend name, as in Resource), in
// the Host's own view. A resource the policy excludes is a
// *NotAllowedError (ErrResourceNotAllowed); a backend that is not
// configured wraps ErrBackendUnavailable. Every attempt is audited (Op
// "resources/read").
func (h *Host) ReadResource(ctx context.Context, backend, uri string) (*mcp.ReadResourceResult, error) {
	return h.readResource(ctx, "", backend, uri)
}

// Prompts is Host.Prompts in the view's profile.
func (v *View) Prompts(ctx context.Context) ([]Prompt, error) { return v.h.prompts(ctx, v.name) }

// GetPrompt is Host.GetPrompt in the view's profile; while a backend the
// profile requires is down it fails with ErrRequiredBackend.
func (v *View) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	return v.h.getPrompt(ctx, v.name, name, args)
}

// Resources is Host.Resources in the view's profile.
func (v *View) Resources(ctx context.Context) ([]Resource, error) { return v.h.resources(ctx, v.name) }

// ReadResource is Host.ReadResource in the view's profile; while a backend
// the profile requires is down it fails with ErrRequiredBackend.
func (v *View) ReadResource(ctx context.Context, backend, uri string) (*mcp.ReadResourceResult, error) {
	return v.h.readResource(ctx, v.name, backend, uri)
}

// profileOf returns the profile of a view name ("": nil). A profile that
// Host.Apply removed while a View of it was kept allows nothing.
func (h *Host) profileOf(profile string) *config.Profile {
	if profile == "" {
		return nil
	}
	if p := h.config().Profiles[profile]; p != nil {
		return p
	}
	return removedProfile(profile)
}

func (h *Host) prompts(ctx context.Context, profile string) ([]Prompt, error) {
	if h.isClosed() {
		return nil, ErrClosed
	}
	var out []Prompt
	for _, b := range h.readyBackends() {
		res, err := h.pipe.list(ctx, listOp(methodListPrompts, profile, b))
		if err != nil {
			if !errors.Is(err, transport.ErrUnsupported) {
				b.logger.Warn("prompts/list failed", "error", err)
			}
			continue
		}
		for _, p := range res.([]*mcp.Prompt) {
			cp := *p
			cp.Name = catalogueName(b.prefix, p.Name)
			out = append(out, Prompt{Prompt: &cp, Backend: b.name, BackendPrompt: p.Name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (h *Host) resources(ctx context.Context, profile string) ([]Resource, error) {
	if h.isClosed() {
		return nil, ErrClosed
	}
	var out []Resource
	for _, b := range h.readyBackends() {
		res, err := h.pipe.list(ctx, listOp(methodListResources, profile, b))
		if err != nil {
			if !errors.Is(err, transport.ErrUnsupported) {
				b.logger.Warn("resources/list failed", "error", err)
			}
			continue
		}
		for _, r := range res.([]*mcp.Resource) {
			out = append(out, Resource{Resource: r, Backend: b.name})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].URI != out[j].URI {
			return out[i].URI < out[j].URI
		}
		return out[i].Backend < out[j].Backend
	})
	return out, nil
}

// getPrompt runs a prompts/get through the item pipeline.
func (h *Host) getPrompt(ctx context.Context, profile, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	res, err := h.runItem(ctx, &op{req: request{method: methodGetPrompt, profile: profile, name: name, promptArgs: args}})
	if err != nil {
		return nil, err
	}
	return res.(*mcp.GetPromptResult), nil
}

// readResource runs a resources/read through the item pipeline.
func (h *Host) readResource(ctx context.Context, profile, backend, uri string) (*mcp.ReadResourceResult, error) {
	res, err := h.runItem(ctx, &op{req: request{method: methodReadResource, profile: profile, name: uri, backend: backend}})
	if err != nil {
		return nil, err
	}
	return res.(*mcp.ReadResourceResult), nil
}

// runItem runs the item op o (prompts/get, resources/read,
// completion/complete) and names its error once (op.named).
func (h *Host) runItem(ctx context.Context, o *op) (any, error) {
	res, err := h.pipe.item(ctx, o)
	return res, o.named(err)
}

func (h *Host) isClosed() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.closed
}
