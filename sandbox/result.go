package sandbox

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/mcpwire"
)

// fastCallToolResult decodes a plugin's tool result without the go-sdk's
// decoder, which allocates ≈32 KiB per result: text-only results with the
// scanner below, other objects (structured content, every content kind)
// with mcpwire.DecodeFast (issue 26, item 2). Text either refuses returns
// ok false and the caller decodes with the go-sdk, so the result is always
// what mcp.CallToolResult's own UnmarshalJSON would give
// (FuzzFastCallToolResult checks this). b has no leading or trailing white
// space.
func fastCallToolResult(b []byte) (*mcp.CallToolResult, bool) {
	if !bytes.Contains(b, []byte(`"structuredContent"`)) {
		if res, ok := textCallToolResult(b); ok {
			return res, true
		}
	}
	if len(b) == 0 || b[0] != '{' {
		return nil, false // decodeOutput explains it
	}
	return mcpwire.DecodeFast(b)
}

// textCallToolResult decodes the common shape of a tool result,
//
//	{"content":[{"type":"text","text":"…"}, …], "isError":bool}
//
// (keys in any order, isError optional, each key at most once). Anything
// else — any other key, content type or value shape, a string with invalid
// UTF-8, duplicate keys, trailing bytes — returns ok false.
func textCallToolResult(b []byte) (res *mcp.CallToolResult, ok bool) {
	s := scanner{mcpwire.Scanner{B: b}}
	if !s.Lit('{') {
		return nil, false
	}
	res = &mcp.CallToolResult{}
	var haveContent, haveIsError bool
	if s.Lit('}') {
		return nil, false // no content: the caller reports it
	}
	for {
		key, ok := s.str()
		if !ok || !s.Lit(':') {
			return nil, false
		}
		switch key {
		case "content":
			if haveContent {
				return nil, false
			}
			haveContent = true
			if res.Content, ok = s.contents(); !ok {
				return nil, false
			}
		case "isError":
			if haveIsError {
				return nil, false
			}
			haveIsError = true
			if res.IsError, ok = s.boolean(); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
		if s.Lit(',') {
			continue
		}
		if !s.Lit('}') {
			return nil, false
		}
		break
	}
	s.Space()
	if s.I != len(s.B) || !haveContent {
		return nil, false
	}
	return res, true
}

type scanner struct{ mcpwire.Scanner }

func (s *scanner) boolean() (bool, bool) {
	s.Space()
	rest := s.B[s.I:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		s.I += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		s.I += 5
		return false, true
	}
	return false, false
}

// str scans a JSON string. One without escapes is converted directly; one
// with escapes is decoded by encoding/json. Control characters and invalid
// UTF-8 fail.
func (s *scanner) str() (string, bool) {
	if !s.Lit('"') {
		return "", false
	}
	start := s.I
	escaped := false
	for s.I < len(s.B) {
		c := s.B[s.I]
		switch {
		case c == '"':
			raw := s.B[start:s.I]
			s.I++
			if !utf8.Valid(raw) {
				return "", false
			}
			if !escaped {
				return string(raw), true
			}
			var v string
			if json.Unmarshal(s.B[start-1:s.I], &v) != nil {
				return "", false
			}
			return v, true
		case c == '\\':
			escaped = true
			s.I += 2
		case c < 0x20:
			return "", false
		default:
			s.I++
		}
	}
	return "", false
}

// contents scans an array of text content blocks.
func (s *scanner) contents() ([]mcp.Content, bool) {
	if !s.Lit('[') {
		return nil, false
	}
	out := []mcp.Content{}
	if s.Lit(']') {
		return out, true
	}
	for {
		if !s.Lit('{') {
			return nil, false
		}
		t := &mcp.TextContent{}
		var haveType, haveText bool
		for {
			key, ok := s.str()
			if !ok || !s.Lit(':') {
				return nil, false
			}
			v, ok := s.str()
			if !ok {
				return nil, false
			}
			switch {
			case key == "type" && !haveType && v == "text":
				haveType = true
			case key == "text" && !haveText:
				haveText = true
				t.Text = v
			default:
				return nil, false
			}
			if s.Lit(',') {
				continue
			}
			if !s.Lit('}') {
				return nil, false
			}
			break
		}
		if !haveType {
			return nil, false
		}
		out = append(out, t)
		if s.Lit(',') {
			continue
		}
		if !s.Lit(']') {
			return nil, false
		}
		return out, true
	}
}
