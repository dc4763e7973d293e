package pdk

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"unicode/utf8"
)

// Hand-written encoding of results, byte for byte what encoding/json
// produces for wireResult (HTML-safe escaping included), without reflection.
// encoding/json is slow inside a Wasm guest; see envelope.go.

const hexDigits = "0123456789abcdef"

// escapeMask flags the bytes of w that appendString does not copy as they
// are: control characters, '"', '\\', '<', '>', '&' and bytes >= 0x80 (see
// stopMask).
func escapeMask(w uint64) uint64 {
	q := w ^ (lsb * '"')
	s := w ^ (lsb * '\\')
	l := w ^ (lsb * '<')
	g := w ^ (lsb * '>')
	a := w ^ (lsb * '&')
	return ((q-lsb)&^q | (s-lsb)&^s | (l-lsb)&^l | (g-lsb)&^g | (a-lsb)&^a | (w-lsb*0x20)&^w | w) & msb
}

// appendString appends s as a JSON string exactly as encoding/json encodes it
// (escapeHTML on: <, > and & become \u003c ...; invalid UTF-8 becomes
// \ufffd; U+2028 and U+2029 are escaped).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			// Skip 8 bytes at a time while none needs escaping.
			w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if m := escapeMask(w); m == 0 {
				i += 8
				continue
			} else {
				i += bits.TrailingZeros64(m) >> 3
			}
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendBase64(dst, data []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, data)
	return append(dst, '"')
}

// compactMask flags the bytes of w that compactObject looks at inside a
// string: '"', '\\', '<', '>', '&' and bytes >= 0x80 (see stopMask).
func compactMask(w uint64) uint64 {
	q := w ^ (lsb * '"')
	s := w ^ (lsb * '\\')
	l := w ^ (lsb * '<')
	g := w ^ (lsb * '>')
	a := w ^ (lsb * '&')
	return ((q-lsb)&^q | (s-lsb)&^s | (l-lsb)&^l | (g-lsb)&^g | (a-lsb)&^a | w) & msb
}

// appendContent appends c's wire JSON, as Content.MarshalJSON (compacted by
// encoding/json) gives it. ok is false for an unknown Type.
func appendContent(dst []byte, c *Content) (_ []byte, ok bool) {
	switch c.Type {
	case "text":
		dst = append(dst, `{"type":"text","text":`...)
		dst = appendString(dst, c.Text)
	case "image", "audio":
		dst = append(dst, `{"type":`...)
		dst = appendString(dst, c.Type)
		dst = append(dst, `,"data":`...)
		dst = appendBase64(dst, c.Data)
		dst = append(dst, `,"mimeType":`...)
		dst = appendString(dst, c.MimeType)
	case "resource_link":
		dst = append(dst, `{"type":"resource_link","uri":`...)
		dst = appendString(dst, c.URI)
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, c.Name)
		if c.MimeType != "" {
			dst = append(dst, `,"mimeType":`...)
			dst = appendString(dst, c.MimeType)
		}
	case "resource":
		dst = append(dst, `{"type":"resource","resource":{"uri":`...)
		dst = appendString(dst, c.URI)
		if c.MimeType != "" {
			dst = append(dst, `,"mimeType":`...)
			dst = appendString(dst, c.MimeType)
		}
		if c.Data != nil {
			dst = append(dst, `,"blob":`...)
			dst = appendBase64(dst, c.Data)
		} else {
			dst = append(dst, `,"text":`...)
			dst = appendString(dst, c.Text)
		}
		dst = append(dst, '}')
	default:
		return dst, false
	}
	return append(dst, '}'), true
}

// appendResult appends the wire JSON of r (non-nil) as json.Marshal of its
// wireResult would, given structured, the already encoded, compacted and
// checked structuredContent (nil for none). ok is false when a content block
// has an unknown type; the caller then falls back to encoding/json for its
// error.
func appendResult(dst []byte, r *Result, structured []byte) (_ []byte, ok bool) {
	dst = append(dst, `{"content":[`...)
	for i := range r.Content {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, ok = appendContent(dst, &r.Content[i]); !ok {
			return dst, false
		}
	}
	dst = append(dst, ']')
	if len(structured) > 0 {
		dst = append(dst, `,"structuredContent":`...)
		dst = append(dst, structured...)
	}
	if r.IsError {
		dst = append(dst, `,"isError":true}`...)
	} else {
		dst = append(dst, `,"isError":false}`...)
	}
	return dst, true
}

// resultSize estimates the encoded size of r, to allocate the output once.
func resultSize(r *Result, structured []byte) int {
	n := 48 + len(structured)
	for i := range r.Content {
		c := &r.Content[i]
		n += 64 + len(c.Text) + len(c.MimeType) + len(c.URI) + len(c.Name) + base64.StdEncoding.EncodedLen(len(c.Data))
	}
	return n + n/16
}

// compactObject returns raw (a json.RawMessage set as structuredContent)
// as json.Marshal would re-encode it (compacted, HTML-safe), if it is a JSON
// object; ok is false otherwise or when it is outside the fast path, and the
// caller then uses encoding/json.
func compactObject(raw json.RawMessage) (_ []byte, ok bool) {
	start := skipWS(raw, 0)
	if start >= len(raw) || raw[start] != '{' {
		return nil, false
	}
	end := valueEnd(raw, start, 0)
	if end < 0 || skipWS(raw, end) != len(raw) {
		return nil, false
	}
	v := raw[start:end]
	// Copy without the space outside strings, escaping as encoding/json's
	// compact does: <, > and & anywhere, U+2028 and U+2029.
	var out []byte
	last := 0
	flush := func(i int) {
		if out == nil {
			out = make([]byte, 0, len(v)+16)
		}
		out = append(out, v[last:i]...)
	}
	for i := 0; i < len(v); {
		c := v[i]
		if c != '"' { // outside strings: only space is dropped
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				flush(i)
				last = i + 1
			}
			i++
			continue
		}
		// In a string (v is valid, so it ends): skip 8 bytes at a time.
		for i++; ; {
			if i+8 <= len(v) {
				if m := compactMask(binary.LittleEndian.Uint64(v[i:])); m == 0 {
					i += 8
					continue
				} else {
					i += bits.TrailingZeros64(m) >> 3
				}
			}
			c := v[i]
			if c == '"' {
				i++
				break
			}
			switch {
			case c == '\\':
				i += 2
			case c == '<' || c == '>' || c == '&':
				flush(i)
				out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
				i++
				last = i
			case c == 0xE2 && i+2 < len(v) && v[i+1] == 0x80 && v[i+2]&^1 == 0xA8:
				flush(i)
				out = append(out, '\\', 'u', '2', '0', '2', hexDigits[v[i+2]&0xF])
				i += 3
				last = i
			default:
				i++
			}
		}
	}
	if out == nil {
		return v, true
	}
	return append(out, v[last:]...), true
}
