package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/bmatcuk/doublestar/v4"
)

// maxGlobAlternatives bounds the expansion of a glob's {a,b} groups when
// UnmatchedGlobs looks at it; a glob with more alternatives is taken as
// matching (no warning).
const maxGlobAlternatives = 256

// UnmatchedGlobs returns a warning for each policy or profile glob over
// catalogue names (the tool lists allow and deny, and the prompt lists
// prompts and deny_prompts, of [policy] and of every [profiles.NAME]) that
// can match no name of any configured backend, by the tool-prefix rule:
// a catalogue name is a backend's tool prefix (NAME__, or its prefix key)
// followed by at least one character (MayOwnToolName). "github__*" with no
// backend whose prefix is "github__" is reported; "*__read_*" is not (it can
// match a name of any prefix), and nothing is reported when a backend has
// prefix = "" (every name may be its). For resources and deny_resources
// ("BACKEND:URI"), a BACKEND glob that matches no backend name is reported.
// Disabled backends (enabled = false) count as configured.
//
// Such a glob is not an error (the backend may be added later, or the glob
// left for another machine's configuration), but it is usually a typo, and
// for a deny glob a dangerous one: the operator thinks something is denied.
// Each warning is an *Error naming the file, the line of the list and its
// key with the element (`policy.allow[0] "github__*"`), in line order; nil
// when there is none. toolhost check prints them as warnings.
func (c *Config) UnmatchedGlobs() []*Error {
	var prefixes []string
	for _, b := range c.Backends() {
		if p := ToolPrefix(b, c.BackendPrefix(b)); p != "" {
			prefixes = append(prefixes, toolNameChars(p))
		}
	}
	slices.Sort(prefixes)
	prefixes = slices.Compact(prefixes)
	var out ErrorList
	warn := func(key toml.Key, i int, glob, msg string) {
		line := 0
		if c.loc != nil {
			line = c.loc.line(key)
		}
		out = append(out, &Error{File: c.file, Line: line, Key: fmt.Sprintf("%s[%d] %q", key, i, glob), Msg: msg})
	}
	noPrefix := c.noPrefixBackend()
	names := func(key toml.Key, list []string, what string) {
		if noPrefix {
			return
		}
		for i, g := range list {
			if slices.ContainsFunc(prefixes, func(p string) bool { return globMayMatchPrefixed(g, p) }) {
				continue
			}
			have := "there is no backend"
			if len(prefixes) > 0 {
				have = "the prefixes are " + strings.Join(prefixes, ", ")
			}
			warn(key, i, g, fmt.Sprintf("matches no %s of any configured backend: no backend's tool prefix fits it (%s); check the backend name, or add the backend", what, have))
		}
	}
	backends := c.Backends()
	resources := func(key toml.Key, list []string) {
		for i, g := range list {
			b, _, _ := strings.Cut(g, ":")
			if slices.ContainsFunc(backends, func(n string) bool { return doublestar.MatchUnvalidated(b, n) }) {
				continue
			}
			warn(key, i, g, fmt.Sprintf("its backend part %q matches no configured backend (%s)", b, dashIfEmpty(strings.Join(backends, ", "))))
		}
	}
	lists := func(base toml.Key, allow, deny, prompts, denyPrompts, res, denyRes []string) {
		k := func(n string) toml.Key { return append(base[:len(base):len(base)], n) }
		names(k("allow"), allow, "tool")
		names(k("deny"), deny, "tool")
		names(k("prompts"), prompts, "prompt")
		names(k("deny_prompts"), denyPrompts, "prompt")
		resources(k("resources"), res)
		resources(k("deny_resources"), denyRes)
	}
	p := &c.Policy
	lists(toml.Key{"policy"}, p.Allow, p.Deny, p.Prompts, p.DenyPrompts, p.Resources, p.DenyResources)
	for _, n := range slices.Sorted(maps.Keys(c.Profiles)) {
		pr := c.Profiles[n]
		lists(toml.Key{"profiles", n}, pr.Allow, pr.Deny, pr.Prompts, pr.DenyPrompts, pr.Resources, pr.DenyResources)
	}
	if len(out) == 0 {
		return nil
	}
	out.sort()
	return out
}

// noPrefixBackend reports whether a backend has prefix = "".
func (c *Config) noPrefixBackend() bool {
	for _, b := range c.Backends() {
		if ToolPrefix(b, c.BackendPrefix(b)) == "" {
			return true
		}
	}
	return false
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "there is none"
	}
	return s
}

// globMayMatchPrefixed reports whether the glob (doublestar syntax over
// names without "/": *, ?, [class], [!class], {a,b}, \x) can match some name
// that is prefix followed by at least one character. A glob it cannot
// analyse (too many alternatives) is taken as matching.
func globMayMatchPrefixed(glob, prefix string) bool {
	alts, ok := expandBraces(glob, maxGlobAlternatives)
	if !ok {
		return true
	}
	for _, a := range alts {
		if prefixReachable(a, prefix) {
			return true
		}
	}
	return false
}

// expandBraces returns the brace-free globs that glob's {a,b} groups
// (nested too) stand for, or false when there would be more than limit.
func expandBraces(glob string, limit int) ([]string, bool) {
	// Find the first top-level "{" not escaped or inside a class.
	start := -1
	for i := 0; i < len(glob); i++ {
		switch glob[i] {
		case '\\':
			i++
		case '[':
			if j := classEnd(glob, i); j > 0 {
				i = j
			}
		case '{':
			start = i
		}
		if start >= 0 {
			break
		}
	}
	if start < 0 {
		return []string{glob}, true
	}
	depth, from := 0, start+1
	var parts []string
	end := -1
	for i := start; i < len(glob) && end < 0; i++ {
		switch glob[i] {
		case '\\':
			i++
		case '[':
			if j := classEnd(glob, i); j > 0 {
				i = j
			}
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				parts = append(parts, glob[from:i])
				end = i
			}
		case ',':
			if depth == 1 {
				parts = append(parts, glob[from:i])
				from = i + 1
			}
		}
	}
	if end < 0 {
		return []string{glob}, true // unbalanced: Load refuses it anyway
	}
	var out []string
	for _, p := range parts {
		rest, ok := expandBraces(glob[:start]+p+glob[end+1:], limit)
		if !ok || len(out)+len(rest) > limit {
			return nil, false
		}
		out = append(out, rest...)
	}
	return out, true
}

// classEnd returns the index of the "]" closing the class that opens at
// glob[i] ("["), or -1.
func classEnd(glob string, i int) int {
	j := i + 1
	if j < len(glob) && (glob[j] == '!' || glob[j] == '^') {
		j++
	}
	if j < len(glob) && glob[j] == ']' {
		j++
	}
	for ; j < len(glob); j++ {
		switch glob[j] {
		case '\\':
			j++
		case ']':
			return j
		}
	}
	return -1
}

// classMatch reports whether the class glob[i:end+1] ("[...]") matches c.
func classMatch(class string, c byte) bool {
	body := class[1 : len(class)-1]
	neg := false
	if body != "" && (body[0] == '!' || body[0] == '^') {
		neg, body = true, body[1:]
	}
	in := false
	for k := 0; k < len(body); k++ {
		lo := body[k]
		if lo == '\\' && k+1 < len(body) {
			k++
			lo = body[k]
		}
		hi := lo
		if k+2 < len(body) && body[k+1] == '-' {
			hi = body[k+2]
			if hi == '\\' && k+3 < len(body) {
				hi = body[k+3]
				k++
			}
			k += 2
		}
		if lo <= c && c <= hi {
			in = true
		}
	}
	return in != neg
}

// prefixReachable reports whether the brace-free glob can consume prefix
// and still match at least one more character: it runs the glob as an NFA
// over prefix and asks whether a position before the glob's end is left.
func prefixReachable(glob, prefix string) bool {
	// Tokenise: each token matches one character (literal, ?, class) or
	// any run (*).
	type token struct {
		star  bool
		any   bool
		lit   byte
		class string
	}
	var toks []token
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '*':
			if len(toks) == 0 || !toks[len(toks)-1].star {
				toks = append(toks, token{star: true})
			}
		case '?':
			toks = append(toks, token{any: true})
		case '[':
			if j := classEnd(glob, i); j > 0 {
				toks = append(toks, token{class: glob[i : j+1]})
				i = j
				continue
			}
			toks = append(toks, token{lit: c})
		case '\\':
			if i+1 < len(glob) {
				i++
			}
			toks = append(toks, token{lit: glob[i]})
		default:
			toks = append(toks, token{lit: c})
		}
	}
	// states[k]: the glob can be at token k having consumed the prefix so
	// far. A star at k may also be skipped (epsilon to k+1).
	states := make([]bool, len(toks)+1)
	closure := func() {
		for k := 0; k < len(toks); k++ {
			if states[k] && toks[k].star {
				states[k+1] = true
			}
		}
	}
	states[0] = true
	closure()
	for i := 0; i < len(prefix); i++ {
		c := prefix[i]
		next := make([]bool, len(toks)+1)
		for k, on := range states {
			if !on || k == len(toks) {
				continue
			}
			t := toks[k]
			switch {
			case t.star:
				next[k] = true
			case t.any, t.class != "" && classMatch(t.class, c), t.class == "" && t.lit == c:
				next[k+1] = true
			}
		}
		states = next
		closure()
	}
	// One more character must be matched: a state before the end.
	return slices.Contains(states[:len(toks)], true)
}
