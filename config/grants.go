package config

import (
	"maps"
	"slices"

	"github.com/BurntSushi/toml"
)

// Grant modes ([tools.NAME] grant; issue 25, item 3).
const (
	// GrantRequired: a call needs a live grant of its client or profile.
	GrantRequired = "required"
	// GrantAsk: without a live grant, the calling client's user is asked
	// (an MCP elicitation) to approve the call.
	GrantAsk = "ask"
)

// GrantMode returns how a call of the catalogue tool name is granted:
// GrantRequired, GrantAsk, or "" (no grant needed). [tools.NAME] grant
// decides when set; otherwise a [policy] require_grant glob that matches
// makes it GrantRequired.
func (c *Config) GrantMode(name string) string {
	if t := c.Tools[name]; t != nil && t.Grant != "" {
		return t.Grant
	}
	for i := range c.Policy.RequireGrantRules {
		if c.Policy.RequireGrantRules[i].Match(name) {
			return GrantRequired
		}
	}
	return ""
}

// NeedsGrants reports whether any tool may need a grant (a [tools.NAME]
// grant or a [policy] require_grant): when not, the host's grant layer
// costs nothing.
func (c *Config) NeedsGrants() bool {
	if len(c.Policy.RequireGrantRules) > 0 {
		return true
	}
	for _, t := range c.Tools {
		if t.Grant != "" {
			return true
		}
	}
	return false
}

// validateGrants checks [tools.NAME] grant and ask_timeout and compiles
// [policy] require_grant (same glob grammar as [policy] allow).
func (l *loader) validateGrants(cfg *Config) {
	cfg.Policy.RequireGrantRules = l.rules(toml.Key{"policy", "require_grant"}, cfg.Policy.RequireGrant, true)
	for _, name := range slices.Sorted(maps.Keys(cfg.Tools)) {
		t := cfg.Tools[name]
		key := toml.Key{"tools", name}
		switch t.Grant {
		case "", GrantRequired, GrantAsk:
		default:
			l.errorf(append(key, "grant"), "%q is not a grant mode: use \"required\" (a live grant, toolhost grant) or \"ask\" (the calling client's user approves each call)", t.Grant)
		}
		l.timeout(append(key, "ask_timeout"), t.AskTimeout)
		if (t.AskTimeout != 0 || l.isSet(append(key, "ask_timeout"))) && t.Grant != GrantAsk && !l.reported(append(key, "ask_timeout")) {
			l.errorf(append(key, "ask_timeout"), "is only used with grant = \"ask\": remove it or set grant")
		}
	}
}
