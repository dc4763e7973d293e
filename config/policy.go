package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/bmatcuk/doublestar/v4"
)

// Policy defaults ([policy] default).
const (
	PolicyAllow = "allow"
	PolicyDeny  = "deny"
)

// Policy is the [policy] table: which namespaced tools ("backend__tool", the
// catalogue names) may be listed and called, which prompts (by catalogue
// name, "backend__prompt") may be listed and rendered, and which resources
// (by backend and URI) may be listed and read.
//
// Decision rule, the same for each of the three kinds (see host.Decide,
// host.DecidePrompt, host.DecideResource): a name matched by any deny glob
// is denied; else one matched by an allow glob is allowed; else the kind's
// default applies.
type Policy struct {
	// Default is "allow" or "deny", the decision for a tool no glob matches.
	// Unset, it is "deny" when Allow is non-empty (an allow list means "only
	// these") and "allow" otherwise (no [policy], or a deny list only).
	//
	// Set in the file, Default is also the default of prompts and
	// resources: with default = "deny", a prompt or resource no allow glob
	// matches is hidden and refused. Unset, each kind's default is inferred
	// from its own allow list (PromptsDefault, ResourcesDefault).
	Default string `toml:"default"`
	// Allow and Deny are glob lists over catalogue names ("fs__read_*",
	// "*__delete_*"; doublestar syntax; names have no "/").
	Allow []string `toml:"allow"`
	Deny  []string `toml:"deny"`

	// Prompts and DenyPrompts are glob lists over prompt catalogue names
	// ("everything__simple_prompt", "fs__*"), as Allow and Deny are for
	// tools.
	Prompts     []string `toml:"prompts"`
	DenyPrompts []string `toml:"deny_prompts"`
	// Resources and DenyResources are globs written "BACKEND:URI", matched
	// against a resource's backend name and URI joined by ":"
	// ("fs:file:///docs/**", "*:mem://*"). Doublestar syntax: "*" stays
	// within one "/"-separated part of the URI, "**" crosses parts.
	Resources     []string `toml:"resources"`
	DenyResources []string `toml:"deny_resources"`

	// AllowRules and DenyRules are Allow and Deny compiled, in order; the
	// other *Rules likewise.
	AllowRules        []Rule `toml:"-" json:"-"`
	DenyRules         []Rule `toml:"-" json:"-"`
	PromptRules       []Rule `toml:"-" json:"-"`
	DenyPromptRules   []Rule `toml:"-" json:"-"`
	ResourceRules     []Rule `toml:"-" json:"-"`
	DenyResourceRules []Rule `toml:"-" json:"-"`

	// PromptsDefault and ResourcesDefault are the decisions ("allow" or
	// "deny") for a prompt or resource no glob matches: Default when the
	// file sets it, else "deny" when that kind's allow list is non-empty
	// and "allow" otherwise. Filled in at load.
	PromptsDefault   string `toml:"-"`
	ResourcesDefault string `toml:"-"`

	// RequireGrant (key require_grant; issue 25, item 3) is a glob list
	// over catalogue names (as Allow): a tool it matches needs a grant as
	// with [tools.NAME] grant = "required" (a [tools.NAME] grant overrides
	// it). RequireGrantRules is it compiled (config/grants.go).
	RequireGrant      []string `toml:"require_grant" json:",omitempty"`
	RequireGrantRules []Rule   `toml:"-" json:"-"`
}

// Profile is one [profiles.NAME] table: a named role that narrows the global
// policy (it can never widen it).
type Profile struct {
	// Name is NAME from the table header.
	Name string `toml:"-"`
	// Line is the line of the [profiles.NAME] header.
	Line int `toml:"-"`

	// Allow, when non-empty, limits the profile to the catalogue names it
	// matches (globs, as Policy.Allow); Deny removes names.
	Allow []string `toml:"allow"`
	Deny  []string `toml:"deny"`
	// Code mode (issue 27; config/codemode.go): CodeMode, when set,
	// serves run_code to this profile (true) or not (false), whatever
	// [serve] code_mode says; nil follows [serve] code_mode.
	CodeMode *bool `toml:"code_mode" json:",omitempty"`
	// Prompts and Resources, when non-empty, limit the profile's prompts
	// and resources as Allow limits its tools (globs as Policy.Prompts and
	// Policy.Resources); DenyPrompts and DenyResources remove some.
	Prompts       []string `toml:"prompts"`
	DenyPrompts   []string `toml:"deny_prompts"`
	Resources     []string `toml:"resources"`
	DenyResources []string `toml:"deny_resources"`
	// The three tiers of backends a profile names (each a list of
	// [servers.NAME] or [plugins.NAME] names; a backend may be in one tier
	// of a profile only):
	//
	//   - Requires: must be ready for any call in this profile to be made
	//     (while one is down every call fails with host.ErrRequiredBackend;
	//     requiring a disabled backend is a load error);
	//   - Recommends: its absence (down, or enabled = false) is logged as a
	//     warning and shown as one by toolhost check --profile;
	//   - Optional: its absence is normal: never a warning, never blocking;
	//     toolhost check --profile shows its state as information.
	Requires   []string `toml:"requires"`
	Recommends []string `toml:"recommends"`
	Optional   []string `toml:"optional"`

	// Rate limits (issue 25, item 4; config/rate.go).
	// Rate limits every call made in the profile, by all its clients
	// together (key rate, like "60/m" or "60/m burst 10"; see RateLimit).
	// Default "": no limit.
	Rate      string    `toml:"rate"`
	RateLimit RateLimit `toml:"-" json:"-"` // Rate parsed by Load or Validate

	// Tool search (issue 27; config/search.go): the profile's catalogue
	// ("full" or "search") and always globs, over [serve]'s when set
	// (always = [] lists no tool beside the meta-tools).
	Catalogue   string   `toml:"catalogue" json:",omitempty"`
	Always      []string `toml:"always" json:",omitempty"`
	AlwaysRules []Rule   `toml:"-" json:"-"`

	AllowRules        []Rule `toml:"-" json:"-"`
	DenyRules         []Rule `toml:"-" json:"-"`
	PromptRules       []Rule `toml:"-" json:"-"`
	DenyPromptRules   []Rule `toml:"-" json:"-"`
	ResourceRules     []Rule `toml:"-" json:"-"`
	DenyResourceRules []Rule `toml:"-" json:"-"`
}

// Rule is one compiled glob of an allow or deny list.
type Rule struct {
	// Key is the list the glob is in ("policy.deny",
	// "profiles.review.allow", "servers.fs.tools").
	Key string
	// Index is the glob's 0-based position in the list.
	Index int
	// Pattern is the glob as written.
	Pattern string
	// Specificity is the number of literal characters in Pattern: among the
	// rules that match a name, the one with the most decides.
	Specificity int
}

// Match reports whether the rule's glob matches name (doublestar syntax; tool
// names have no "/", so * matches any run of characters).
func (r *Rule) Match(name string) bool { return doublestar.MatchUnvalidated(r.Pattern, name) }

// String names the rule as `KEY[INDEX] "PATTERN"`, e.g.
// `policy.deny[1] "*__delete_*"`.
func (r *Rule) String() string { return fmt.Sprintf("%s[%d] %q", r.Key, r.Index, r.Pattern) }

// Best returns the most specific rule of rules that matches name (the first
// one on a tie), or nil.
func Best(rules []Rule, name string) *Rule {
	var best *Rule
	for i := range rules {
		r := &rules[i]
		if (best == nil || r.Specificity > best.Specificity) && r.Match(name) {
			best = r
		}
	}
	return best
}

// CompileRule compiles one glob as the rule KEY[index]. It is what the
// loader uses; embedders building a Config by hand can use it too.
func CompileRule(key string, index int, pattern string) (Rule, error) {
	if pattern == "" {
		return Rule{}, fmt.Errorf("empty glob: remove it")
	}
	depth := 0
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		}
		if depth < 0 {
			break
		}
	}
	var err error
	switch {
	case !doublestar.ValidatePattern(pattern):
		err = fmt.Errorf("malformed: an unclosed [ or {, or a trailing \\")
	case depth != 0:
		err = fmt.Errorf("unbalanced { and }")
	}
	if err != nil {
		return Rule{}, fmt.Errorf("invalid glob %q: %v; use * for any run of characters, ? for one, [abc] and {a,b}", pattern, err)
	}
	return Rule{Key: key, Index: index, Pattern: pattern, Specificity: literalChars(pattern)}, nil
}

// literalChars counts the characters of a glob that match only themselves.
func literalChars(p string) int {
	n, depth := 0, 0
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p):
			i++
			if depth == 0 {
				n++
			}
		case c == '[' || c == '{':
			depth++
		case (c == ']' || c == '}') && depth > 0:
			depth--
		case c == '*' || c == '?' || depth > 0:
		default:
			n++
		}
	}
	return n
}

// DeadAllow is an allow glob that a deny glob makes useless.
type DeadAllow struct {
	Allow, Deny *Rule
}

// DeadAllows reports the allow globs (of [policy] and every profile) whose
// every match is also matched by a deny glob that applies to them (a global
// deny, or a deny of the same profile). Deny always wins, so such an allow is
// dead. The check is conservative: it reports an allow when a deny glob
// matches the allow's own text ("fs__*" matches "fs__read_*").
func (c *Config) DeadAllows() []DeadAllow {
	var out []DeadAllow
	check := func(allows []Rule, denies ...[]Rule) {
		for i := range allows {
			a := &allows[i]
			for _, list := range denies {
				if d := Best(list, a.Pattern); d != nil {
					out = append(out, DeadAllow{a, d})
					break
				}
			}
		}
	}
	check(c.Policy.AllowRules, c.Policy.DenyRules)
	for _, n := range slices.Sorted(maps.Keys(c.Profiles)) {
		p := c.Profiles[n]
		check(p.AllowRules, c.Policy.DenyRules, p.DenyRules)
	}
	return out
}

// nameGlobChars are the characters a glob over catalogue names may hold:
// those of names, and glob syntax.
const nameGlobChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-*?[]{},!\\"

// rules compiles the globs of list (at key), reporting bad ones. With
// catalogue set, the globs are over catalogue names, and a character no
// name can hold is an error (the glob could never match).
func (l *loader) rules(key toml.Key, list []string, catalogue bool) []Rule {
	var out []Rule
	for i, p := range list {
		r, err := CompileRule(key.String(), i, p)
		if err != nil {
			l.errorf(key, "element %d: %v", i+1, err)
			continue
		}
		if j := strings.IndexFunc(p, func(c rune) bool { return !strings.ContainsRune(nameGlobChars, c) }); catalogue && j >= 0 {
			l.errorf(key, "element %d %q: character %q is never in a tool name (names are backend__tool, of A-Z a-z 0-9 _ -), so the glob can never match", i+1, p, p[j])
			continue
		}
		out = append(out, r)
	}
	return out
}

// resourceRules compiles globs "BACKEND:URI" of resources or
// deny_resources.
func (l *loader) resourceRules(key toml.Key, list []string) []Rule {
	for i, p := range list {
		// A resource URI has a scheme, so the URI glob has a ":" too,
		// unless it starts with a wildcard ("fs:**").
		b, u, ok := strings.Cut(p, ":")
		if !ok || b == "" || strings.Trim(b, nameGlobChars) != "" || (!strings.Contains(u, ":") && !strings.ContainsAny(u[:min(1, len(u))], "*?[{")) {
			l.errorf(key, "element %d %q is not BACKEND:URI: write the backend name (or a glob of it), a colon and the URI glob, like \"fs:file:///docs/**\" or \"fs:**\"", i+1, p)
			return nil
		}
	}
	return l.rules(key, list, false)
}

func (l *loader) validatePolicy(cfg *Config) {
	p := &cfg.Policy
	k := func(name string) toml.Key { return toml.Key{"policy", name} }
	p.AllowRules = l.rules(k("allow"), p.Allow, true)
	p.DenyRules = l.rules(k("deny"), p.Deny, true)
	p.PromptRules = l.rules(k("prompts"), p.Prompts, true)
	p.DenyPromptRules = l.rules(k("deny_prompts"), p.DenyPrompts, true)
	p.ResourceRules = l.resourceRules(k("resources"), p.Resources)
	p.DenyResourceRules = l.resourceRules(k("deny_resources"), p.DenyResources)
	inferred := func(allow []string) string {
		if len(allow) > 0 {
			return PolicyDeny
		}
		return PolicyAllow
	}
	switch p.Default {
	case "":
		if !l.reported(k("default")) {
			p.Default = inferred(p.Allow)
			p.PromptsDefault, p.ResourcesDefault = inferred(p.Prompts), inferred(p.Resources)
		}
	case PolicyAllow, PolicyDeny:
		if p.PromptsDefault == "" {
			// Set in the file (or in Go): it governs every kind. (A
			// second Validate finds PromptsDefault already inferred.)
			p.PromptsDefault, p.ResourcesDefault = p.Default, p.Default
		}
	default:
		l.errorf(k("default"), "%q is not a policy default: use \"allow\" or \"deny\"", p.Default)
	}
	for _, n := range slices.Sorted(maps.Keys(cfg.Profiles)) {
		pr := cfg.Profiles[n]
		pk := toml.Key{"profiles", n}
		pkk := func(name string) toml.Key { return toml.Key{"profiles", n, name} }
		if !backendNameRE.MatchString(n) {
			l.errorf(pk, "invalid profile name %q: use 1 to 64 letters, digits, _ and -", n)
		}
		pr.AllowRules = l.rules(pkk("allow"), pr.Allow, true)
		pr.DenyRules = l.rules(pkk("deny"), pr.Deny, true)
		pr.PromptRules = l.rules(pkk("prompts"), pr.Prompts, true)
		pr.DenyPromptRules = l.rules(pkk("deny_prompts"), pr.DenyPrompts, true)
		pr.ResourceRules = l.resourceRules(pkk("resources"), pr.Resources)
		pr.DenyResourceRules = l.resourceRules(pkk("deny_resources"), pr.DenyResources)
		// A backend both optional and required or recommended is a
		// contradiction. (requires with recommends is accepted, as before
		// optional existed: requires decides.)
		tier := map[string]string{} // backend → the first tier naming it
		for _, f := range []struct {
			key  string
			list []string
		}{{"requires", pr.Requires}, {"recommends", pr.Recommends}, {"optional", pr.Optional}} {
			for i, b := range f.list {
				if prev, dup := tier[b]; dup && prev != f.key && f.key == "optional" {
					l.errorf(pkk(f.key), "element %d: backend %q is in both %s and optional of profile %q: an optional backend may be absent, a %s one may not; remove it from one", i+1, b, prev, n, map[string]string{"requires": "required", "recommends": "recommended"}[prev])
					continue
				}
				if _, dup := tier[b]; !dup {
					tier[b] = f.key
				}
				if _, ok := cfg.Servers[b]; ok || cfg.Plugins[b] != nil {
					// A profile that requires a disabled backend could
					// make no call at all: refuse it now. (recommends
					// on one is a warning, from the host and check.)
					if f.key == "requires" && !cfg.BackendEnabled(b) {
						l.errorf(pkk(f.key), "element %d: backend %q is disabled (enabled = false) but profile %q requires it: enable the backend or remove it from requires", i+1, b, n)
					}
					continue
				}
				if _, ok := cfg.Plugins[b]; ok {
					continue
				}
				l.errorf(pkk(f.key), "element %d: no backend named %q: use the NAME of a [servers.NAME] or [plugins.NAME] table (%s)", i+1, b, strings.Join(cfg.Backends(), ", "))
			}
		}
	}
}

// backendTools compiles a backend's tools and deny_tools.
func (l *loader) backendTools(key toml.Key, tools, deny []string) (allow, denied []Rule) {
	k := func(name string) toml.Key { return append(key[:len(key):len(key)], name) }
	if tools != nil && len(tools) == 0 && (l.isSet(k("tools")) || l.loc == nil) {
		l.errorf(k("tools"), "an empty list allows no tool: remove the key to allow every tool, or remove the backend")
	}
	return l.rules(k("tools"), tools, false), l.rules(k("deny_tools"), deny, false)
}

// ToolAllowed applies a backend's tools and deny_tools to one of its own tool
// names: it reports whether the tool is registered and, when it is not, the
// rule that excluded it (a deny_tools glob, or "KEY.tools" when no tools glob
// matches).
func ToolAllowed(allow, deny []Rule, name string) (bool, string) {
	if d := Best(deny, name); d != nil {
		return false, d.String()
	}
	if allow == nil {
		return true, ""
	}
	if a := Best(allow, name); a != nil {
		return true, a.String()
	}
	if len(allow) > 0 {
		return false, strings.TrimSuffix(allow[0].Key, ".tools") + ".tools (no glob matches)"
	}
	return false, ""
}

// compileRedact compiles [host] audit_redact.
func (l *loader) compileRedact(h *Host) {
	key := toml.Key{"host", "audit_redact"}
	h.AuditRedactRE = nil
	for i, p := range h.AuditRedact {
		re, err := regexp.Compile("(?i)" + p)
		if err != nil {
			l.errorf(key, "element %d %q is not a regular expression: %v", i+1, p, err)
			continue
		}
		h.AuditRedactRE = append(h.AuditRedactRE, re)
	}
}
