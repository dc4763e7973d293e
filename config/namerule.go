package config

import "strconv"

// nameRule matches ^[A-Za-z0-9_-]{min,max}$ (ASCII letters, digits, "_"
// and "-", min to max bytes) without a regular expression: compiling that
// counted repetition (max copies of the class) cost over 100 µs per rule at
// every process start, whatever the command (issue 26, item 3). It has the
// method of *regexp.Regexp its callers use.
type nameRule struct{ min, max int }

// MatchString reports whether s follows the rule.
func (r nameRule) MatchString(s string) bool {
	if len(s) < r.min || len(s) > r.max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// String is the rule as the regular expression it matches.
func (r nameRule) String() string {
	return "^[A-Za-z0-9_-]{" + strconv.Itoa(r.min) + "," + strconv.Itoa(r.max) + "}$"
}
