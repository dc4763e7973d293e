package host

import (
	"sort"

	"github.com/toolhost/toolhost/config"
)

// Needs returns, sorted, the names of the backends of cfg that a call of
// the catalogue tool name through profile ("" for the [policy] alone) may
// need started:
//   - the backends that may own name: those whose tool prefix (the backend
//     name + "__", or its prefix key) name starts with and is longer than,
//     by the rule calls use to find the backend of a tool not listed yet
//     (the prefix with characters outside [A-Za-z0-9_-] read as "_"); a
//     backend with prefix = "" may own every name;
//   - the owners, by the same rule, of the fallback of name's [tools.NAME]
//     table;
//   - the backends the profile requires.
//
// It starts nothing and needs only the configuration, so a program (the
// CLI's toolhost call) can build a Host that starts these backends eagerly
// and leaves the others lazy (config.StartLazy). An empty result means no
// backend can serve name (a call fails with ErrUnknownTool, whose
// suggestions need the whole catalogue: start every backend then). An
// unknown profile adds nothing (Host.Profile reports it).
func Needs(cfg *config.Config, name, profile string) []string {
	set := map[string]bool{}
	owners := func(tool string) int {
		n := 0
		for _, b := range cfg.Backends() {
			if config.MayOwnToolName(config.ToolPrefix(b, cfg.BackendPrefix(b)), tool) {
				set[b] = true
				n++
			}
		}
		return n
	}
	if owners(name) == 0 {
		return nil
	}
	if t := cfg.Tools[name]; t != nil {
		for _, fb := range t.Fallback {
			owners(fb)
		}
	}
	if pr := cfg.Profiles[profile]; profile != "" && pr != nil {
		for _, r := range pr.Requires {
			if _, ok := cfg.Servers[r]; ok {
				set[r] = true
			} else if _, ok := cfg.Plugins[r]; ok {
				set[r] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for b := range set {
		out = append(out, b)
	}
	sort.Strings(out)
	return out
}
