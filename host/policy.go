package host

import (
	"context"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
)

// Decision is the policy's verdict on one catalogue tool in one view.
type Decision struct {
	// Allowed reports whether the tool is in the view.
	Allowed bool
	// Rule names what decided, e.g. `policy.deny[1] "*__delete_*"`,
	// `profiles.review.allow[0] "fs__read_*"` or `policy.default "deny"`.
	Rule string
}

// Decide applies the global policy and, when prof is not nil, a profile to
// the catalogue name name:
//
//  1. a name matched by any deny glob (of the policy or the profile) is
//     denied; the most specific matching deny (most literal characters; the
//     first on a tie, policy before profile) is the rule;
//  2. else the name must be allowed by the policy: by an allow glob, or by
//     its default when no allow glob matches;
//  3. and, when the profile has an allow list, by one of its globs (a
//     profile narrows, it never widens);
//  4. the rule of an allowed name is the most specific matching allow, or
//     `policy.default "allow"`.
//
// A Policy whose Default is empty behaves as "allow".
func Decide(pol *config.Policy, prof *config.Profile, name string) Decision {
	var allow, deny []config.Rule
	if prof != nil {
		allow, deny = prof.AllowRules, prof.DenyRules
	}
	return decide(pol.AllowRules, pol.DenyRules, pol.Default, prof, allow, deny, "allow", name)
}

// view is the catalogue as one profile sees it ("" is the Host's own view:
// the global policy only).
type view struct {
	name      string
	prof      *config.Profile
	decisions map[string]Decision // every catalogue name
	names     []string            // the allowed names, sorted
}

func (h *Host) buildViews(tools map[string]entry, names []string) map[string]*view {
	views := map[string]*view{}
	mk := func(name string, prof *config.Profile) {
		v := &view{name: name, prof: prof, decisions: make(map[string]Decision, len(names))}
		for _, n := range names {
			d := Decide(&h.config().Policy, prof, n)
			v.decisions[n] = d
			if d.Allowed {
				v.names = append(v.names, n)
			}
		}
		views[name] = v
	}
	mk("", nil)
	for n, p := range h.config().Profiles {
		mk(n, p)
	}
	return views
}

// View is the catalogue as one profile ([profiles.NAME]) sees it: the tools
// that both the global [policy] and the profile allow. Get one with
// Host.Profile; it is valid until the Host is closed and safe for concurrent
// use. The Host's own Tools and CallTool are the view of no profile (the
// global policy only).
type View struct {
	h    *Host
	name string
}

// Profile returns the view of the profile name. An unknown name is an error
// wrapping ErrUnknownProfile. Backends the profile recommends that are down
// (failed, restarting or needing a login; not idle or starting) are logged
// as a warning with their last error, and so are those disabled by their
// configuration (enabled = false; config.Load refuses a profile that
// requires one); those it requires make every CallTool of
// the view fail with ErrRequiredBackend while they are down.
func (h *Host) Profile(name string) (*View, error) {
	h.mu.RLock()
	_, ok := h.views[name]
	closed := h.closed
	h.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	profiles := h.config().Profiles
	if !ok || name == "" || profiles[name] == nil {
		return nil, fmt.Errorf("%w %q: the profiles are the [profiles.NAME] tables of the configuration (%d defined)", ErrUnknownProfile, name, len(profiles))
	}
	// A recommended backend is worth a warning only when it is down
	// (failed, restarting, or waiting for a login), with the reason: one
	// that is idle (lazy, or left unstarted by a program that starts only
	// what a call needs) or still starting is on its way.
	for _, b := range profiles[name].Recommends {
		if down, err := h.named(b).down(); down {
			h.logger.Warn("profile recommends a backend that is not ready", "profile", name, "backend", b, "error", err)
		} else if h.config().Servers[b] != nil || h.config().Plugins[b] != nil {
			if !h.config().BackendEnabled(b) {
				h.logger.Warn("profile recommends a backend that is disabled (enabled = false)", "profile", name, "backend", b)
			}
		}
	}
	return &View{h: h, name: name}, nil
}

// Name returns the view's profile name.
func (v *View) Name() string { return v.name }

// Tools returns the tools of the view, sorted by name (see Host.Tools).
func (v *View) Tools(ctx context.Context) ([]Tool, error) { return v.h.viewTools(ctx, v.name) }

// CallTool calls a tool of the view (see Host.CallTool). A catalogue tool
// outside the view is refused with a *ToolNotAllowedError (ErrToolNotAllowed)
// without reaching its backend; while a backend the profile requires is
// down, every call fails with ErrRequiredBackend.
func (v *View) CallTool(ctx context.Context, name string, args any) (*mcp.CallToolResult, error) {
	return v.h.call(ctx, v.name, name, args)
}

// ToolDecision is one catalogue tool with the view's decision on it.
type ToolDecision struct {
	Tool
	Decision
}

// Decisions returns every catalogue tool, allowed or not, with the view's
// decision, sorted by name.
func (v *View) Decisions() []ToolDecision { return v.h.decisions(v.name) }

// Decisions is View.Decisions for the Host's own view (no profile).
func (h *Host) Decisions() []ToolDecision { return h.decisions("") }

func (h *Host) decisions(profile string) []ToolDecision {
	h.mu.RLock()
	defer h.mu.RUnlock()
	vw := h.views[profile]
	if vw == nil {
		return nil
	}
	var out []ToolDecision
	for _, n := range h.names {
		e := h.tools[n]
		cp := *e.tool
		out = append(out, ToolDecision{Tool{Tool: &cp, Backend: e.b.name, BackendTool: e.name}, vw.decisions[n]})
	}
	return out
}

// Excluded is a tool a backend offers that is not in the catalogue at all:
// removed by the backend's tools or deny_tools, or dropped because its
// inputSchema or outputSchema does not compile.
type Excluded struct {
	Backend string
	// Tool is the tool's own name on the backend.
	Tool string
	// Reason is the rule that excluded it (`servers.fs.deny_tools[0]
	// "write_*"`) or why its schema was refused.
	Reason string
}

// Excluded returns the tools of ready backends that are not in the
// catalogue, sorted by backend and tool.
func (h *Host) Excluded() []Excluded {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := append([]Excluded(nil), h.excluded...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Backend != out[j].Backend {
			return out[i].Backend < out[j].Backend
		}
		return out[i].Tool < out[j].Tool
	})
	return out
}
