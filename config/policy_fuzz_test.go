package config

import (
	"strings"
	"testing"
)

// FuzzCompileRule: compiling any glob and matching it against any name never
// panics; a glob of letters, digits and _ matches exactly itself; specificity
// never exceeds the pattern's length.
func FuzzCompileRule(f *testing.F) {
	for _, seed := range []string{"fs__*", "*__delete_*", "fs__read_?", "{a,b}__x", "[a-c]*", `a\*b`, "{", "[", "a{b{c}}", "**", ""} {
		f.Add(seed, "fs__read_file")
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		r, err := CompileRule("policy.allow", 0, pattern)
		if err != nil {
			return
		}
		r.Match(name)
		if r.Specificity > len(pattern) {
			t.Fatalf("specificity %d > len(%q)", r.Specificity, pattern)
		}
		// A glob of tool-name characters only (the loader rejects any other
		// character) is a literal.
		if strings.Trim(pattern, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == "" {
			if !r.Match(pattern) {
				t.Fatalf("literal glob %q does not match itself", pattern)
			}
			if name != pattern && r.Match(name) {
				t.Fatalf("literal glob %q matches %q", pattern, name)
			}
		}
	})
}
