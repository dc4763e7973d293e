package pdk

import (
	"encoding/binary"
	"math/bits"
)

// A hand-written reader for the call_tool envelope
//
//	{"request": {"name": "...", "arguments": {...}, "_meta": {...}}, "context": {...}}
//
// encoding/json costs tens of microseconds per call inside a Wasm guest: it
// makes an indirect call per input byte, and a host that enforces deadlines
// (wazero's close-on-context-done, as toolhost does) pays an exit to Go at
// every Wasm loop header, which the Go compiler turns every taken jump into.
// So call_tool reads its input with this reader instead, written to take few
// jumps: strings are scanned 8 bytes at a time (SWAR), compact input takes no
// loop iterations between tokens.
//
// It is a fast path only: it validates the whole input and slices out the
// parts, and gives up (ok == false) on anything outside the common shape, in
// which case the caller decodes with encoding/json as before. It never
// accepts an input that encoding/json rejects, and what it returns is what
// encoding/json would decode (TestEnvelope and FuzzEnvelope check both).
//
// It gives up on: invalid JSON; a top level or "request" that is not an
// object; a "name" that is not a string of printable ASCII without escapes;
// a missing "request" or "name"; a key at the top level or in "request" that
// has an escape or a non-ASCII byte, or that matches a known key only
// case-insensitively (encoding/json matches keys case-insensitively); a known
// key given twice; nesting deeper than maxScanDepth.

// envelope is the part of the call_tool input pdk uses. The slices alias the
// input (with cap == len, so that an append copies); args, meta and ctx are
// nil when the key is absent, and otherwise are the value's exact bytes (as a
// json.RawMessage field would hold them).
type envelope struct {
	name            []byte
	args, meta, ctx []byte
}

// maxScanDepth bounds the nesting the fast reader follows (encoding/json
// allows 10000; deeper inputs go to it).
const maxScanDepth = 512

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// stopMask flags (high bit of each byte) the bytes of w that end a run of
// plain string bytes: '"', '\\', control characters and, when hi == msb,
// bytes >= 0x80. The lowest flag is exact (borrows only propagate upwards
// from a flagged byte), which is all the callers use.
func stopMask(w, hi uint64) uint64 {
	q := w ^ (lsb * '"')
	s := w ^ (lsb * '\\')
	return ((q-lsb)&^q | (s-lsb)&^s | (w-lsb*0x20)&^w | w&hi) & msb
}

func isHex(c byte) bool {
	return c-'0' < 10 || (c|0x20)-'a' < 6
}

// strEnd scans a string whose opening quote is at b[i-1]. It returns the
// index of the closing quote (or -1 if the string is invalid or
// unterminated) and whether the contents are plain: printable ASCII without
// escapes, so that they are the decoded value. It reads whole words up to
// cap(b), never using bytes past len(b).
func strEnd(b []byte, i int) (end int, plain bool) {
	bb := b[:cap(b)]
	hi := uint64(msb)
	for {
		if i+8 <= len(bb) {
			m := stopMask(binary.LittleEndian.Uint64(bb[i:]), hi)
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		if i >= len(b) {
			return -1, false
		}
		c := b[i]
		switch {
		case c == '"':
			return i, hi != 0
		case c == '\\':
			hi = 0
			if i+1 >= len(b) {
				return -1, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+5 >= len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return -1, false
				}
				i += 6
			default:
				return -1, false
			}
		case c < 0x20:
			return -1, false
		default: // >= 0x80, or a plain byte in the last 7 of the buffer
			if c >= 0x80 {
				hi = 0
			}
			i++
		}
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// numEnd returns the end of the number starting at b[i], or -1.
func numEnd(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return -1
	}
	if b[i] == '0' {
		i++
	} else if b[i]-'1' < 9 {
		for i++; i < len(b) && b[i]-'0' < 10; i++ {
		}
	} else {
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i]-'0' >= 10 {
			return -1
		}
		for i++; i < len(b) && b[i]-'0' < 10; i++ {
		}
	}
	if i < len(b) && b[i]|0x20 == 'e' {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i]-'0' >= 10 {
			return -1
		}
		for i++; i < len(b) && b[i]-'0' < 10; i++ {
		}
	}
	return i
}

// valueEnd returns the end of the JSON value starting at b[i] (no leading
// space), or -1 if it is invalid. depth is the nesting depth around it.
// Objects and arrays are read iteratively, the kinds of the open containers
// kept in a bit stack (1 = object).
func valueEnd(b []byte, i, depth int) int {
	var stack [maxScanDepth / 64]uint64
	n := 0 // open containers
	for {
		// At the start of a value.
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; c {
		case '{', '[':
			if depth+n >= maxScanDepth {
				return -1
			}
			bit := uint64(1) << (n % 64)
			if c == '{' {
				stack[n/64] |= bit
			} else {
				stack[n/64] &^= bit
			}
			n++
			i = skipWS(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' == '{'+2, ']' == '['+2
				i++
				n--
				break
			}
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return -1
				}
				if i, _ = strEnd(b, i+1); i < 0 {
					return -1
				}
				if i = skipWS(b, i+1); i >= len(b) || b[i] != ':' {
					return -1
				}
				i = skipWS(b, i+1)
			}
			continue
		case '"':
			if i, _ = strEnd(b, i+1); i < 0 {
				return -1
			}
			i++
		case 't':
			if len(b)-i < 4 || string(b[i:i+4]) != "true" {
				return -1
			}
			i += 4
		case 'f':
			if len(b)-i < 5 || string(b[i:i+5]) != "false" {
				return -1
			}
			i += 5
		case 'n':
			if len(b)-i < 4 || string(b[i:i+4]) != "null" {
				return -1
			}
			i += 4
		default:
			if i = numEnd(b, i); i < 0 {
				return -1
			}
		}
		// After a value inside n open containers.
		for n > 0 {
			i = skipWS(b, i)
			if i >= len(b) {
				return -1
			}
			obj := stack[(n-1)/64]>>((n-1)%64)&1 != 0
			c := b[i]
			i++
			if c == ',' {
				i = skipWS(b, i)
				if obj {
					if i >= len(b) || b[i] != '"' {
						return -1
					}
					if i, _ = strEnd(b, i+1); i < 0 {
						return -1
					}
					if i = skipWS(b, i+1); i >= len(b) || b[i] != ':' {
						return -1
					}
					i = skipWS(b, i+1)
				}
				break
			}
			if obj && c == '}' || !obj && c == ']' {
				n--
				continue
			}
			return -1
		}
		if n == 0 {
			return i
		}
	}
}

// member reads `"key" :` at b[i] (after space) and returns the key, which
// must be plain, and the index of the value after space; i < 0 on failure.
func member(b []byte, i int) (key []byte, next int) {
	if i >= len(b) || b[i] != '"' {
		return nil, -1
	}
	e, plain := strEnd(b, i+1)
	if e < 0 || !plain {
		return nil, -1
	}
	key = b[i+1 : e]
	if i = skipWS(b, e+1); i >= len(b) || b[i] != ':' {
		return nil, -1
	}
	return key, skipWS(b, i+1)
}

// next reads the ',' or '}' after an object member's value at b[i]. It
// returns the index after the comma (and space) and more == true, or the
// index after the '}' and more == false; i < 0 on failure.
func next(b []byte, i int) (int, bool) {
	i = skipWS(b, i)
	if i >= len(b) {
		return -1, false
	}
	switch b[i] {
	case ',':
		return skipWS(b, i+1), true
	case '}':
		return i + 1, false
	}
	return -1, false
}

func equalFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if b[i]|0x20 != s[i]|0x20 { // s is lower case letters and '_'
			return false
		}
	}
	return true
}

// parseEnvelope reads the call_tool input. ok == false means "use
// encoding/json": the input is invalid or outside the fast path.
func parseEnvelope(in []byte) (env envelope, ok bool) {
	b := in
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return envelope{}, false
	}
	i = skipWS(b, i+1)
	haveReq, haveCtx := false, false
	more := true
	if i < len(b) && b[i] == '}' {
		i, more = i+1, false
	}
	for more {
		var key []byte
		if key, i = member(b, i); i < 0 {
			return envelope{}, false
		}
		switch string(key) {
		case "request":
			if haveReq {
				return envelope{}, false
			}
			haveReq = true
			if i = parseRequest(b, i, &env); i < 0 {
				return envelope{}, false
			}
		case "context":
			if haveCtx {
				return envelope{}, false
			}
			haveCtx = true
			start := i
			if i = valueEnd(b, i, 1); i < 0 {
				return envelope{}, false
			}
			env.ctx = b[start:i:i]
		default:
			if equalFoldASCII(key, "request") || equalFoldASCII(key, "context") {
				return envelope{}, false
			}
			if i = valueEnd(b, i, 1); i < 0 {
				return envelope{}, false
			}
		}
		if i, more = next(b, i); i < 0 {
			return envelope{}, false
		}
	}
	if skipWS(b, i) != len(b) || !haveReq || env.name == nil {
		return envelope{}, false
	}
	return env, true
}

// parseRequest reads the "request" object at b[i] into env and returns the
// index after it, or -1.
func parseRequest(b []byte, i int, env *envelope) int {
	if i >= len(b) || b[i] != '{' {
		return -1
	}
	i = skipWS(b, i+1)
	haveArgs, haveMeta := false, false
	more := true
	if i < len(b) && b[i] == '}' {
		i, more = i+1, false
	}
	for more {
		var key []byte
		if key, i = member(b, i); i < 0 {
			return -1
		}
		start := i
		switch string(key) {
		case "name":
			if env.name != nil || i >= len(b) || b[i] != '"' {
				return -1
			}
			e, plain := strEnd(b, i+1)
			if e < 0 || !plain {
				return -1
			}
			env.name = b[i+1 : e : e]
			i = e + 1
		case "arguments":
			if haveArgs {
				return -1
			}
			haveArgs = true
			if i = valueEnd(b, i, 2); i < 0 {
				return -1
			}
			env.args = b[start:i:i]
		case "_meta":
			if haveMeta {
				return -1
			}
			haveMeta = true
			if i = valueEnd(b, i, 2); i < 0 {
				return -1
			}
			env.meta = b[start:i:i]
		default:
			if equalFoldASCII(key, "name") || equalFoldASCII(key, "arguments") || equalFoldASCII(key, "_meta") {
				return -1
			}
			if i = valueEnd(b, i, 2); i < 0 {
				return -1
			}
		}
		if i, more = next(b, i); i < 0 {
			return -1
		}
	}
	return i
}
