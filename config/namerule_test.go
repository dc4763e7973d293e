package config

import (
	"regexp"
	"strings"
	"testing"
)

// TestNameRuleIsTheRegexp: nameRule matches what the regular expression it
// replaced matched, on hostile strings too (multi-byte runes, NUL, a
// trailing newline, which $ does not accept in Go's syntax, lengths around
// the bounds).
func TestNameRuleIsTheRegexp(t *testing.T) {
	inputs := []string{"", "a", "A_b-9", "a b", "a\n", "\na", "é", "a\x00", "a.b", "a/b", "__", "-",
		strings.Repeat("a", 39), strings.Repeat("a", 40), strings.Repeat("a", 41),
		strings.Repeat("z", 63), strings.Repeat("z", 64), strings.Repeat("z", 65), strings.Repeat("é", 20)}
	for _, r := range []nameRule{backendNameRE, prefixRE, toolNameRE} {
		re := regexp.MustCompile(r.String())
		for _, s := range inputs {
			if got, want := r.MatchString(s), re.MatchString(s); got != want {
				t.Errorf("%s on %q: %v, the regexp says %v", r, s, got, want)
			}
		}
	}
}

func FuzzNameRule(f *testing.F) {
	f.Add("abc", 1, 64)
	f.Add("", 0, 40)
	f.Fuzz(func(t *testing.T, s string, lo, hi int) {
		lo, hi = lo&63, hi&127
		if lo > hi {
			lo, hi = hi, lo
		}
		r := nameRule{lo, hi}
		if got, want := r.MatchString(s), regexp.MustCompile(r.String()).MatchString(s); got != want {
			t.Fatalf("%s on %q: %v, the regexp says %v", r, s, got, want)
		}
	})
}
