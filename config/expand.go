package config

import (
	"fmt"
	"strings"
)

// expandError is one problem found while expanding a string.
type expandError struct {
	msg   string
	unset bool // an unset variable (as opposed to a malformed reference)
}

// expand replaces ${VAR} and ${VAR:-default} references in s with values
// from lookup, and "$$" with "$". A "$" followed by anything else is kept as
// is. The default of ${VAR:-default} is used when VAR is unset or empty; it
// may itself contain references, which are expanded only when it is used
// (but always checked for syntax). Values from lookup are not expanded again.
//
// expand never fails outright: on a problem it keeps the reference's text and
// reports the problem.
func expand(s string, lookup func(string) (string, bool)) (string, []expandError) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var (
		b    strings.Builder
		errs []expandError
	)
	for i := 0; i < len(s); {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
		case '{':
			end := closingBrace(s, i+2)
			if end < 0 {
				errs = append(errs, expandError{msg: fmt.Sprintf(
					"unterminated %q: close the reference with \"}\", or write \"$$\" for a literal \"$\"", s[i:])})
				b.WriteString(s[i:])
				i = len(s)
				continue
			}
			val, rerrs := expandRef(s[i:end+1], s[i+2:end], lookup)
			errs = append(errs, rerrs...)
			b.WriteString(val)
			i = end + 1
		default:
			b.WriteByte('$')
			i++
		}
	}
	return b.String(), errs
}

// expandRef expands one reference; ref is its whole text ("${A:-b}"), body
// the text between the braces ("A:-b").
func expandRef(ref, body string, lookup func(string) (string, bool)) (string, []expandError) {
	n := 0
	for n < len(body) && isEnvNameByte(body[n], n == 0) {
		n++
	}
	name, rest := body[:n], body[n:]
	switch {
	case body == "":
		return ref, []expandError{{msg: `empty reference "${}": write ${NAME} or ${NAME:-default}, or "$$" for a literal "$"`}}
	case name == "" || (rest != "" && !strings.HasPrefix(rest, ":-")):
		return ref, []expandError{{msg: fmt.Sprintf(
			"malformed reference %q: write ${NAME} or ${NAME:-default}, where NAME is letters, digits and _ not starting with a digit", ref)}}
	}
	val, set := lookup(name)
	if rest == "" {
		if !set {
			return ref, []expandError{{unset: true, msg: fmt.Sprintf(
				"environment variable %s is not set: set it, or give a default with ${%s:-default}", name, name)}}
		}
		return val, nil
	}
	def, errs := expand(rest[2:], lookup)
	if val != "" {
		// The default is not used: only its syntax matters.
		var syntax []expandError
		for _, e := range errs {
			if !e.unset {
				syntax = append(syntax, e)
			}
		}
		return val, syntax
	}
	return def, errs
}

// closingBrace returns the index of the "}" that closes a reference whose
// body starts at start, skipping "$$" and nested "${...}"; -1 if none.
func closingBrace(s string, start int) int {
	depth := 1
	for j := start; j < len(s); j++ {
		switch {
		case s[j] == '$' && j+1 < len(s) && (s[j+1] == '$' || s[j+1] == '{'):
			if s[j+1] == '{' {
				depth++
			}
			j++
		case s[j] == '}':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

func isEnvNameByte(c byte, first bool) bool {
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (!first && c >= '0' && c <= '9')
}

// validEnvName reports whether s is a portable environment variable name:
// letters, digits and "_", not starting with a digit.
func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isEnvNameByte(s[i], i == 0) {
			return false
		}
	}
	return true
}
