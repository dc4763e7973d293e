package jsonx

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string (invalid UTF-8 becomes U+FFFD, as
// with encoding/json; <, > and & are not escaped; \b and \f are written as
// \u0008 and \u000c). Runs of characters that need no escaping are copied
// whole. Audit records and canonical arguments are written with it: its
// output must not change.
func AppendString(b []byte, s string) []byte { return appendString(b, s, false) }

// AppendMarshaled appends s as json.Marshal writes it: with <, > and &
// escaped (\u003c, \u003e, \u0026: encoding/json's HTML escaping, on by
// default), \b and \f as such (Go 1.22 and later), other control
// characters as \u00XX, U+2028 and U+2029 escaped, and invalid UTF-8 as
// \ufffd. FuzzAppendMarshaled holds it to json.Marshal byte for byte.
func AppendMarshaled(b []byte, s string) []byte { return appendString(b, s, true) }

// appendString is AppendString, or AppendMarshaled when marshaled.
func appendString(b []byte, s string, marshaled bool) []byte {
	b = append(b, '"')
	start := 0 // s[start:i] is still to be copied
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!marshaled || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case marshaled && c == '\b':
				b = append(b, '\\', 'b')
			case marshaled && c == '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = append(b, hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
