// Package termsafe escapes untrusted text (tool descriptions, error
// messages, results, log lines from plugins and servers) before it is
// written to a terminal, so that a backend cannot move the cursor, clear
// the screen, set the window title, or forge lines of toolhost's own output
// with ESC, CR, newlines or other control characters.
//
// Escaped are: C0 controls (U+0000–U+001F), DEL (U+007F), C1 controls
// (U+0080–U+009F, which some terminals obey like ESC sequences), the
// Unicode bidirectional and invisible format controls that can reorder or
// hide text (U+061C, U+200B–U+200F, U+202A–U+202E, U+2060–U+2069,
// U+FEFF), and bytes that are not valid UTF-8. They are written as Go
// escapes: \n, \r, \t, \x1b, \u202e, and \xff for an invalid byte; a
// backslash itself is left as is. JSON output (--json) must not go through
// this package: it is exact, and encoding/json already escapes C0 controls.
package termsafe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Line escapes every control character of s, newlines and tabs included:
// for text printed inside one line (a table cell, an error message).
func Line(s string) string { return escape(s, false) }

// Text escapes the control characters of s but keeps newlines and tabs: for
// multi-line text printed as a block (a tool result on a terminal).
func Text(s string) string { return escape(s, true) }

func unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2060 && r <= 0x2069, r == 0xfeff:
		return true
	}
	return false
}

func escape(s string, keepLines bool) string {
	clean := true
	for i, r := range s {
		if unsafe(r) && !(keepLines && (r == '\n' || r == '\t')) || r == utf8.RuneError && isInvalid(s, i) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unsafe(r) && r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func isInvalid(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size <= 1
}
