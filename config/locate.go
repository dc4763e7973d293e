package config

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// locator maps TOML key paths to the 1-based line they are defined on.
//
// The toml package reports positions for syntax errors but not for keys, so
// the locator scans the source itself. It understands just enough TOML to
// never be misled: table headers ([a.b], [a."quoted.b"], [[a]]), dotted and
// quoted keys, inline tables (also multi-line, TOML 1.1), arrays spanning
// lines, comments, and the four string forms (a "[x]" at the start of a line
// inside a multi-line string or array is not a header). It is only run on
// input the toml package has accepted, and never panics on any input.
type locator struct {
	// explicit holds keys defined by a header or a key = value line.
	explicit map[string]int
	// implicit holds tables created on the way: "a" and "a.b" for a.b.c = 1.
	implicit map[string]int
}

// locate scans src.
func locate(src string) *locator {
	s := &scanner{src: src, line: 1, loc: &locator{explicit: map[string]int{}, implicit: map[string]int{}}}
	s.document()
	return s.loc
}

// line returns the line of key, or of its closest enclosing table or key the
// locator knows, or 0 if none is known.
func (l *locator) line(key toml.Key) int {
	for n := len(key); n > 0; n-- {
		k := key[:n].String()
		if ln, ok := l.explicit[k]; ok {
			return ln
		}
		if ln, ok := l.implicit[k]; ok {
			return ln
		}
	}
	return 0
}

// define records key at line; the first definition wins.
func (l *locator) define(key []string, line int) {
	for n := 1; n < len(key); n++ {
		k := toml.Key(key[:n]).String()
		if _, ok := l.implicit[k]; !ok {
			l.implicit[k] = line
		}
	}
	if len(key) == 0 {
		return
	}
	k := toml.Key(key).String()
	if _, ok := l.explicit[k]; !ok {
		l.explicit[k] = line
	}
}

type scanner struct {
	src  string
	pos  int
	line int
	loc  *locator
}

func (s *scanner) eof() bool { return s.pos >= len(s.src) }

func (s *scanner) peek(prefix string) bool { return strings.HasPrefix(s.src[s.pos:], prefix) }

// document scans top-level lines: headers and key/value pairs.
func (s *scanner) document() {
	var table []string
	for {
		s.skipBlank(true)
		if s.eof() {
			return
		}
		start := s.pos
		switch {
		case s.peek("[["):
			line := s.line
			s.pos += 2
			table = s.key()
			s.skipBlank(false)
			if s.peek("]]") {
				s.pos += 2
			}
			s.loc.define(table, line)
		case s.peek("["):
			line := s.line
			s.pos++
			table = s.key()
			s.skipBlank(false)
			if s.peek("]") {
				s.pos++
			}
			s.loc.define(table, line)
		default:
			s.keyValue(table, true)
		}
		if s.pos == start {
			s.pos++ // not TOML: never loop
		}
	}
}

// keyValue scans "key = value" inside table (recorded when record is set).
func (s *scanner) keyValue(table []string, record bool) {
	line := s.line
	k := s.key()
	if len(k) == 0 {
		return
	}
	s.skipBlank(false)
	if s.peek("=") {
		s.pos++
	}
	s.skipBlank(false)
	var full []string
	if record {
		full = append(append(make([]string, 0, len(table)+len(k)), table...), k...)
		s.loc.define(full, line)
	}
	s.value(full, record)
}

// value scans one value; the keys of an inline table are recorded under path
// when record is set.
func (s *scanner) value(path []string, record bool) {
	switch {
	case s.eof():
	case s.peek(`"""`), s.peek(`'''`):
		s.multilineString(s.src[s.pos])
	case s.peek(`"`):
		s.basicString()
	case s.peek(`'`):
		s.literalString()
	case s.peek("["):
		s.pos++
		for {
			s.skipBlank(true)
			if s.eof() {
				return
			}
			switch s.src[s.pos] {
			case ']':
				s.pos++
				return
			case ',':
				s.pos++
				continue
			}
			start := s.pos
			s.value(nil, false) // keys of tables in arrays have no path
			if s.pos == start {
				s.pos++
			}
		}
	case s.peek("{"):
		s.pos++
		for {
			s.skipBlank(true)
			if s.eof() {
				return
			}
			switch s.src[s.pos] {
			case '}':
				s.pos++
				return
			case ',':
				s.pos++
				continue
			}
			start := s.pos
			s.keyValue(path, record)
			if s.pos == start {
				s.pos++
			}
		}
	default: // number, bool, date: up to a delimiter
		for !s.eof() && !strings.ContainsRune(",]}#\r\n", rune(s.src[s.pos])) {
			s.pos++
		}
	}
}

// key scans a possibly dotted key and returns its decoded parts.
func (s *scanner) key() []string {
	var parts []string
	for {
		s.skipBlank(false)
		if s.eof() {
			return parts
		}
		switch s.src[s.pos] {
		case '"':
			parts = append(parts, s.basicString())
		case '\'':
			parts = append(parts, s.literalString())
		default:
			start := s.pos
			for !s.eof() && isBareKeyByte(s.src[s.pos]) {
				s.pos++
			}
			if s.pos == start {
				return parts
			}
			parts = append(parts, s.src[start:s.pos])
		}
		s.skipBlank(false)
		if !s.peek(".") {
			return parts
		}
		s.pos++
	}
}

func isBareKeyByte(c byte) bool {
	return c == '_' || c == '-' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
}

// skipBlank skips spaces, tabs, comments and, when newlines is set, line
// breaks.
func (s *scanner) skipBlank(newlines bool) {
	for !s.eof() {
		switch s.src[s.pos] {
		case ' ', '\t', '\r':
			s.pos++
		case '\n':
			if !newlines {
				return
			}
			s.line++
			s.pos++
		case '#':
			for !s.eof() && s.src[s.pos] != '\n' {
				s.pos++
			}
		default:
			return
		}
	}
}

// basicString scans a one-line "..." string and returns its decoded value.
func (s *scanner) basicString() string {
	s.pos++ // opening quote
	var b strings.Builder
	for !s.eof() {
		c := s.src[s.pos]
		switch {
		case c == '"':
			s.pos++
			return b.String()
		case c == '\n':
			return b.String() // not TOML; the line ends the string
		case c == '\\' && s.pos+1 < len(s.src):
			s.pos += 2
			s.escape(&b, s.src[s.pos-1])
		default:
			b.WriteByte(c)
			s.pos++
		}
	}
	return b.String()
}

// escape decodes the escape sequence whose letter is e (already consumed);
// hexadecimal digits are consumed here.
func (s *scanner) escape(b *strings.Builder, e byte) {
	hexRune := func(n int) {
		if s.pos+n > len(s.src) {
			s.pos = len(s.src)
			return
		}
		v, err := strconv.ParseUint(s.src[s.pos:s.pos+n], 16, 32)
		s.pos += n
		if err != nil || !utf8.ValidRune(rune(v)) {
			b.WriteRune(utf8.RuneError)
			return
		}
		b.WriteRune(rune(v))
	}
	switch e {
	case 'b':
		b.WriteByte('\b')
	case 't':
		b.WriteByte('\t')
	case 'n':
		b.WriteByte('\n')
	case 'f':
		b.WriteByte('\f')
	case 'r':
		b.WriteByte('\r')
	case 'e':
		b.WriteByte(0x1b)
	case 'x':
		hexRune(2)
	case 'u':
		hexRune(4)
	case 'U':
		hexRune(8)
	case '\n':
		s.line++ // not TOML in a one-line string; keep the count right
	default: // '"', '\\'
		b.WriteByte(e)
	}
}

// literalString scans a one-line '...' string and returns its value.
func (s *scanner) literalString() string {
	s.pos++
	start := s.pos
	for !s.eof() && s.src[s.pos] != '\'' && s.src[s.pos] != '\n' {
		s.pos++
	}
	v := s.src[start:s.pos]
	if !s.eof() && s.src[s.pos] == '\'' {
		s.pos++
	}
	return v
}

// multilineString scans a """...""" or ”'...”' string, counting lines.
func (s *scanner) multilineString(q byte) {
	delim := strings.Repeat(string(q), 3)
	s.pos += 3
	for !s.eof() {
		c := s.src[s.pos]
		switch {
		case c == '\\' && q == '"':
			s.pos++
			if !s.eof() && s.src[s.pos] == '\n' {
				s.line++
			}
			s.pos++
		case s.peek(delim):
			s.pos += 3
			// Up to two more quotes belong to the string: """a"""" is `a"`.
			for i := 0; i < 2 && !s.eof() && s.src[s.pos] == q; i++ {
				s.pos++
			}
			return
		default:
			if c == '\n' {
				s.line++
			}
			s.pos++
		}
	}
}
