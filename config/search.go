package config

import (
	"maps"
	"slices"

	"github.com/BurntSushi/toml"
)

// Catalogue modes: what a profile's MCP server lists ([serve] catalogue,
// [profiles.NAME] catalogue; issue 27, item 1).
const (
	// CatalogueFull lists every tool the profile allows (the default).
	CatalogueFull = "full"
	// CatalogueSearch lists the meta-tools search_tools and call_tool,
	// and the tools that [serve] always (or the profile's always) matches.
	CatalogueSearch = "search"
)

// ToolSearch is the tool-search setting of one profile's MCP server, with
// the profile's keys over [serve]'s.
type ToolSearch struct {
	// Catalogue is CatalogueFull or CatalogueSearch.
	Catalogue string
	// Always are the globs of the tools still listed in search mode (the
	// profile's always when it sets one, even empty; else [serve]'s), as
	// written and compiled.
	Always      []string
	AlwaysRules []Rule
}

// ListsAlways reports whether the catalogue name is listed in search mode.
func (s ToolSearch) ListsAlways(name string) bool {
	for i := range s.AlwaysRules {
		if s.AlwaysRules[i].Match(name) {
			return true
		}
	}
	return false
}

// ToolSearchOf returns the tool-search setting of the MCP server of
// profile ("" for the global view): the profile's catalogue and always
// keys where it sets them, else [serve]'s; catalogue defaults to
// CatalogueFull. An unknown profile gets [serve]'s.
func (c *Config) ToolSearchOf(profile string) ToolSearch {
	ts := ToolSearch{Catalogue: c.Serve.Catalogue, Always: c.Serve.Always, AlwaysRules: c.Serve.AlwaysRules}
	if p := c.Profiles[profile]; profile != "" && p != nil {
		if p.Catalogue != "" {
			ts.Catalogue = p.Catalogue
		}
		if p.Always != nil {
			ts.Always, ts.AlwaysRules = p.Always, p.AlwaysRules
		}
	}
	if ts.Catalogue == "" {
		ts.Catalogue = CatalogueFull
	}
	return ts
}

// validateSearch checks catalogue and always of [serve] and of every
// [profiles.NAME], and compiles the always globs.
func (l *loader) validateSearch(cfg *Config) {
	mode := func(key toml.Key, v string) {
		switch v {
		case "", CatalogueFull, CatalogueSearch:
		default:
			l.errorf(key, "%q is not a catalogue mode: use %q (list every tool) or %q (list search_tools, call_tool and the always tools)", v, CatalogueFull, CatalogueSearch)
		}
	}
	mode(toml.Key{"serve", "catalogue"}, cfg.Serve.Catalogue)
	cfg.Serve.AlwaysRules = l.rules(toml.Key{"serve", "always"}, cfg.Serve.Always, true)
	for _, n := range slices.Sorted(maps.Keys(cfg.Profiles)) {
		p := cfg.Profiles[n]
		mode(toml.Key{"profiles", n, "catalogue"}, p.Catalogue)
		p.AlwaysRules = l.rules(toml.Key{"profiles", n, "always"}, p.Always, true)
	}
}
