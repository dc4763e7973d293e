package host

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

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
	prof := h.profileOf(profile)
	var out []Prompt
	for _, b := range h.readyBackends() {
		var ps []*mcp.Prompt
		err := bounded(ctx, b, func(ctx context.Context, tr transport.Transport) (err error) { ps, err = tr.ListPrompts(ctx); return })
		if err != nil {
			if !errors.Is(err, transport.ErrUnsupported) {
				b.logger.Warn("prompts/list failed", "error", err)
			}
			continue
		}
		for _, p := range ps {
			name := catalogueName(b.prefix, p.Name)
			if !DecidePrompt(&h.config().Policy, prof, name).Allowed {
				continue
			}
			cp := *p
			cp.Name = name
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
	prof := h.profileOf(profile)
	var out []Resource
	for _, b := range h.readyBackends() {
		var rs []*mcp.Resource
		err := bounded(ctx, b, func(ctx context.Context, tr transport.Transport) (err error) { rs, err = tr.ListResources(ctx); return })
		if err != nil {
			if !errors.Is(err, transport.ErrUnsupported) {
				b.logger.Warn("resources/list failed", "error", err)
			}
			continue
		}
		for _, r := range rs {
			if DecideResource(&h.config().Policy, prof, b.name, r.URI).Allowed {
				out = append(out, Resource{Resource: r, Backend: b.name})
			}
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

// audited starts the audit record of one prompts/get or resources/read
// (nil when auditing is off) and returns the function that completes and
// writes it.
func (h *Host) audited(ctx context.Context, op, profile string) (*AuditRecord, func(error)) {
	if !h.audit.enabled() {
		return nil, func(error) {}
	}
	start := time.Now()
	rec := &AuditRecord{Time: start.UTC(), Op: op, Profile: profile, Client: clientOf(ctx), Decision: "none"}
	return rec, func(err error) {
		rec.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
		h.finish(rec, nil, err, "")
	}
}

// decided notes d in rec (if any) and returns the refusal for a denied d.
func decided(rec *AuditRecord, d Decision, backend string, refusal error) error {
	if rec != nil {
		rec.Backend, rec.Rule, rec.Decision = backend, d.Rule, "deny"
		if d.Allowed {
			rec.Decision = "allow"
		}
	}
	if !d.Allowed {
		return refusal
	}
	return nil
}

// required fails while a backend the profile requires is down.
func (h *Host) required(profile, what string) error {
	prof := h.profileOf(profile)
	if prof == nil {
		return nil
	}
	for _, r := range prof.Requires {
		if down, lastErr := h.named(r).down(); down {
			return fmt.Errorf("%s: %w: profile %q requires backend %q, which is not ready (see toolhost status): %w", what, ErrRequiredBackend, profile, r, lastErr)
		}
	}
	return nil
}

func (h *Host) getPrompt(ctx context.Context, profile, name string, args map[string]string) (res *mcp.GetPromptResult, err error) {
	rec, done := h.audited(ctx, "prompts/get", profile)
	defer func() { done(err) }()
	if rec != nil {
		rec.Prompt = name
		obj := make(map[string]any, len(args))
		for k, v := range args {
			obj[k] = v
		}
		canonical, redacted := canonicalArgs(obj, h.audit, 64)
		rec.ArgsSHA256, rec.Args = hashArgs(canonical), redacted
	}
	// Resolve the name among every backend's prompts, allowed or not, so
	// that a denied prompt is told apart from an unknown one.
	var found *Prompt
	for _, b := range h.readyBackends() {
		var ps []*mcp.Prompt
		if bounded(ctx, b, func(ctx context.Context, tr transport.Transport) (err error) { ps, err = tr.ListPrompts(ctx); return }) != nil {
			continue
		}
		for _, p := range ps {
			if catalogueName(b.prefix, p.Name) == name {
				found = &Prompt{Prompt: p, Backend: b.name, BackendPrompt: p.Name}
			}
		}
	}
	if h.isClosed() {
		return nil, ErrClosed
	}
	if found == nil {
		return nil, fmt.Errorf("prompt %q: %w", name, ErrUnknownTool)
	}
	d := DecidePrompt(&h.config().Policy, h.profileOf(profile), name)
	if err := decided(rec, d, found.Backend, &NotAllowedError{Kind: "prompt", Name: name, Profile: profile, Rule: d.Rule}); err != nil {
		return nil, err
	}
	if err := h.required(profile, name); err != nil {
		return nil, err
	}
	err = bounded(ctx, h.named(found.Backend), func(ctx context.Context, tr transport.Transport) (err error) {
		res, err = tr.GetPrompt(ctx, &mcp.GetPromptParams{Name: found.BackendPrompt, Arguments: args})
		return
	})
	if err != nil {
		return nil, fmt.Errorf("prompt %q: %w", name, err)
	}
	return res, nil
}

func (h *Host) readResource(ctx context.Context, profile, backend, uri string) (res *mcp.ReadResourceResult, err error) {
	rec, done := h.audited(ctx, "resources/read", profile)
	defer func() { done(err) }()
	if rec != nil {
		rec.URI = uri
	}
	if h.isClosed() {
		return nil, ErrClosed
	}
	b := h.named(backend)
	if b == nil {
		return nil, fmt.Errorf("%w: no backend %q", ErrBackendUnavailable, backend)
	}
	d := DecideResource(&h.config().Policy, h.profileOf(profile), backend, uri)
	if err := decided(rec, d, backend, &NotAllowedError{Kind: "resource", Name: uri, Backend: backend, Profile: profile, Rule: d.Rule}); err != nil {
		return nil, err
	}
	if err := h.required(profile, uri); err != nil {
		return nil, err
	}
	err = bounded(ctx, b, func(ctx context.Context, tr transport.Transport) (err error) {
		res, err = tr.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		return
	})
	if err != nil {
		return nil, fmt.Errorf("resource %q of %s: %w", uri, backend, err)
	}
	return res, nil
}

func (h *Host) isClosed() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.closed
}
