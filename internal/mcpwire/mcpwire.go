// Package mcpwire is toolhost's own codec for the hot path of an MCP
// client's tools/call: it writes a tools/call request and reads the JSON-RPC
// response that answers it into the go-sdk's own types (*mcp.CallToolResult
// and its mcp.Content values, *jsonrpc.Error), without the go-sdk's JSON
// decoder, which allocates a 32 KiB buffer for every message and again for
// every nested value (issue 26, item 2). It is not part of toolhost's public
// API.
//
// The go-sdk's decoder stays the reference: DecodeCallToolResult gives
// exactly what json.Unmarshal into an mcp.CallToolResult gives (the same
// value, or an error where that refuses the text), because it decodes only
// the text it is sure about itself and hands everything else to the go-sdk
// (see DecodeFast). The differential and fuzz tests hold it to that.
package mcpwire

//lint:file-ignore SA1019 tool_use content (sampling) is deprecated as of protocol 2026-07-28 (SEP-2577) but results may still carry it

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxDepth is the go-sdk's limit on nested arrays and objects in a message
// (its internal/json defaultMaxDepth): deeper text is handed to the go-sdk,
// which refuses it.
const MaxDepth = 1000

// DecodeCallToolResult decodes raw, the "result" member of a tools/call
// response, as json.Unmarshal into an mcp.CallToolResult does (the go-sdk's
// UnmarshalJSON): the same value, or that function's error. Common text is
// decoded by DecodeFast; the rest by the go-sdk.
func DecodeCallToolResult(raw []byte) (*mcp.CallToolResult, error) {
	if r, ok := DecodeFast(raw); ok {
		return r, nil
	}
	r := new(mcp.CallToolResult)
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, err
	}
	return r, nil
}

// wireResult is a CallToolResult as it travels (the go-sdk's own
// unmarshalling shape).
type wireResult struct {
	Meta              mcp.Meta        `json:"_meta,omitempty"`
	Content           []*wireContent  `json:"content"`
	StructuredContent any             `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	InputRequests     json.RawMessage `json:"inputRequests,omitempty"`
	RequestState      string          `json:"requestState,omitempty"`
	ResultType        string          `json:"resultType"`
}

// wireContent is one content block as it travels: the go-sdk's wireContent,
// field for field.
type wireContent struct {
	Type              string                `json:"type"`
	Text              string                `json:"text,omitempty"`
	MIMEType          string                `json:"mimeType,omitempty"`
	Data              []byte                `json:"data,omitempty"`
	Resource          *mcp.ResourceContents `json:"resource,omitempty"`
	URI               string                `json:"uri,omitempty"`
	Name              string                `json:"name,omitempty"`
	Title             string                `json:"title,omitempty"`
	Description       string                `json:"description,omitempty"`
	Size              *int64                `json:"size,omitempty"`
	Meta              mcp.Meta              `json:"_meta,omitempty"`
	Annotations       *mcp.Annotations      `json:"annotations,omitempty"`
	Icons             []mcp.Icon            `json:"icons,omitempty"`
	ID                string                `json:"id,omitempty"`
	Input             map[string]any        `json:"input,omitempty"`
	ToolUseID         string                `json:"toolUseId,omitempty"`
	NestedContent     []*wireContent        `json:"content,omitempty"`
	StructuredContent any                   `json:"structuredContent,omitempty"`
	IsError           bool                  `json:"isError,omitempty"`
}

// knownKeys are the JSON names of every struct field the decoding fills.
// encoding/json matches a key to a field ignoring case; the go-sdk's
// decoder does not: a key that is not one of these but folds to one sends
// the text to the go-sdk.
var knownKeys = []string{
	"_meta", "content", "structuredContent", "isError", "inputRequests", "requestState", "resultType",
	"type", "text", "mimeType", "data", "resource", "uri", "name", "title", "description", "size",
	"annotations", "icons", "id", "input", "toolUseId",
	"blob",                                 // ResourceContents
	"audience", "lastModified", "priority", // Annotations
	"src", "sizes", "theme", // Icon
}

// resultTypes holds a CallToolResult per resultType the go-sdk knows, its
// unexported field set by the go-sdk's own UnmarshalJSON, once: a decoded
// result starts as a copy of one.
var resultTypes = sync.OnceValue(func() map[string]mcp.CallToolResult {
	m := map[string]mcp.CallToolResult{"": {}}
	for _, t := range []string{"complete", "input_required"} {
		var r mcp.CallToolResult
		if json.Unmarshal([]byte(`{"resultType":"`+t+`"}`), &r) == nil {
			r.Content = nil
			m[t] = r
		}
	}
	return m
})

// DecodeFast decodes raw as DecodeCallToolResult does when it can do so
// without the go-sdk's decoder; ok false means "ask the go-sdk" (and says
// nothing about whether raw is valid). It refuses: text nested deeper than
// MaxDepth, an object key with an escape or one that differs only in case
// from a field name, a content type other than text, image, audio,
// resource_link, resource and tool_use, a null content block, inputRequests,
// a resultType other than "", "complete" and "input_required", and whatever
// encoding/json cannot decode.
func DecodeFast(raw []byte) (*mcp.CallToolResult, bool) {
	if !plainKeys(raw) {
		return nil, false
	}
	var w wireResult
	if json.Unmarshal(raw, &w) != nil || w.InputRequests != nil {
		return nil, false
	}
	var tmpl mcp.CallToolResult // resultType "": no need to build resultTypes
	if w.ResultType != "" {
		t, ok := resultTypes()[w.ResultType]
		if !ok {
			return nil, false
		}
		tmpl = t
	}
	res := new(mcp.CallToolResult)
	*res = tmpl
	res.Meta = w.Meta
	res.StructuredContent = w.StructuredContent
	res.IsError = w.IsError
	res.RequestState = w.RequestState
	res.Content = make([]mcp.Content, 0, len(w.Content))
	for _, wc := range w.Content {
		c, ok := content(wc)
		if !ok {
			return nil, false
		}
		res.Content = append(res.Content, c)
	}
	return res, true
}

// content is the go-sdk's contentFromWire for the kinds DecodeFast takes.
func content(w *wireContent) (mcp.Content, bool) {
	if w == nil {
		return nil, false
	}
	switch w.Type {
	case "text":
		return &mcp.TextContent{Text: w.Text, Meta: w.Meta, Annotations: w.Annotations}, true
	case "image":
		return &mcp.ImageContent{MIMEType: w.MIMEType, Data: w.Data, Meta: w.Meta, Annotations: w.Annotations}, true
	case "audio":
		return &mcp.AudioContent{MIMEType: w.MIMEType, Data: w.Data, Meta: w.Meta, Annotations: w.Annotations}, true
	case "resource_link":
		return &mcp.ResourceLink{URI: w.URI, Name: w.Name, Title: w.Title, Description: w.Description,
			MIMEType: w.MIMEType, Size: w.Size, Meta: w.Meta, Annotations: w.Annotations, Icons: w.Icons}, true
	case "resource":
		return &mcp.EmbeddedResource{Resource: w.Resource, Meta: w.Meta, Annotations: w.Annotations}, true
	case "tool_use":
		return &mcp.ToolUseContent{ID: w.ID, Name: w.Name, Input: w.Input, Meta: w.Meta}, true
	}
	// tool_result (nested content with its own rules) and unknown types:
	// the go-sdk decides.
	return nil, false
}

// plainKeys scans b once, without allocating: it reports false when b nests
// deeper than MaxDepth, or has an object key with a backslash or one that
// folds to a field name without being it. It does not validate b.
func plainKeys(b []byte) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
			if depth > MaxDepth {
				return false
			}
		case '}', ']':
			depth--
		case '"':
			start := i + 1
			esc := false
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					esc = true
					i++
				}
			}
			if i >= len(b) {
				return false
			}
			end := i
			// A key is a string followed by a colon.
			j := i + 1
			for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
				j++
			}
			if j < len(b) && b[j] == ':' {
				if esc || foldsToField(b[start:end]) {
					return false
				}
			}
		}
	}
	return true
}

// foldsToField reports whether key is not a field name but equals one
// ignoring case (as encoding/json folds: Unicode simple folding).
func foldsToField(key []byte) bool {
	for _, k := range knownKeys {
		if string(key) == k {
			return false
		}
	}
	for _, k := range knownKeys {
		// A fold may change a character's UTF-8 length (K, U+212A, folds
		// to k): compare whenever the key could fold to k.
		if len(key) >= len(k) && len(key) <= 3*len(k) && strings.EqualFold(string(key), k) {
			return true
		}
	}
	return false
}

// Response is a JSON-RPC response's members as they travel, slices of the
// text given to ParseResponse: ID (nil: none), Result and Error (nil when
// absent or null).
type Response struct {
	ID, Result, Error []byte
}

// ParseResponse reads the top-level members of line, one JSON value, when
// it is a JSON-RPC response: an object with an "id" and no "method". ok
// false otherwise (a request, a notification, a batch, or text that is not
// an object). Duplicate members: the last wins, as with encoding/json. It
// allocates nothing; the text is not validated beyond its structure.
func ParseResponse(line []byte) (r Response, ok bool) {
	s := Scanner{B: line}
	if !s.Lit('{') {
		return r, false
	}
	if s.Lit('}') {
		return r, false
	}
	for {
		key, v, ok := s.Member()
		if !ok {
			return r, false
		}
		switch string(key) {
		case "id":
			r.ID = v
		case "result":
			r.Result = nonNull(v)
		case "error":
			r.Error = nonNull(v)
		case "method":
			return r, false
		}
		if s.Lit(',') {
			continue
		}
		if !s.Lit('}') {
			return r, false
		}
		break
	}
	s.Space()
	return r, s.I == len(line) && r.ID != nil
}

func nonNull(v []byte) []byte {
	if string(v) == "null" {
		return nil
	}
	return v
}

// DecodeError decodes a JSON-RPC error object as the go-sdk does.
func DecodeError(raw []byte) (*jsonrpc.Error, error) {
	e := new(jsonrpc.Error)
	if err := json.Unmarshal(raw, e); err != nil {
		return nil, err
	}
	return e, nil
}

// Scanner walks JSON text: B from I on. Space and Lit are the two steps
// every hand-written reader of JSON in toolhost takes (this package's, and
// the sandbox's reader of plugin results).
type Scanner struct {
	B []byte
	I int
}

// Space passes over JSON white space (RFC 8259, section 2).
func (s *Scanner) Space() {
	for s.I < len(s.B) {
		switch s.B[s.I] {
		case ' ', '\t', '\n', '\r':
			s.I++
		default:
			return
		}
	}
}

// Lit passes over white space and then c, if c is next; false (and only
// the white space passed) if it is not.
func (s *Scanner) Lit(c byte) bool {
	s.Space()
	if s.I < len(s.B) && s.B[s.I] == c {
		s.I++
		return true
	}
	return false
}

// Member passes over an object member's key and its colon, and returns the
// key's text between its quotes (escapes kept: a key with a backslash is
// not its text) and the value's text (from its first byte to its last;
// see skip for what is checked of it). ok is false when no member is next.
func (s *Scanner) Member() (key, value []byte, ok bool) {
	key, ok = s.rawString()
	if !ok || !s.Lit(':') {
		return nil, nil, false
	}
	s.Space()
	start := s.I
	if !s.skip() {
		return nil, nil, false
	}
	return key, s.B[start:s.I], true
}

// rawString returns a string's text between its quotes, escapes kept.
func (s *Scanner) rawString() ([]byte, bool) {
	if !s.Lit('"') {
		return nil, false
	}
	start := s.I
	for s.I < len(s.B) {
		switch s.B[s.I] {
		case '"':
			s.I++
			return s.B[start : s.I-1], true
		case '\\':
			s.I += 2
		default:
			s.I++
		}
	}
	return nil, false
}

// skip passes over one value: a string, an object or array (counting
// brackets outside strings, at any depth: the caller's text is valid JSON,
// or what skip returns is refused later), or a literal.
func (s *Scanner) skip() bool {
	s.Space()
	if s.I >= len(s.B) {
		return false
	}
	switch s.B[s.I] {
	case '"':
		_, ok := s.rawString()
		return ok
	case '{', '[':
		depth := 0
		for s.I < len(s.B) {
			switch s.B[s.I] {
			case '"':
				if _, ok := s.rawString(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.I++
					return true
				}
			}
			s.I++
		}
		return false
	default:
		start := s.I
		for s.I < len(s.B) {
			switch s.B[s.I] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.I > start
			}
			s.I++
		}
		return s.I > start
	}
}

// bufs holds the buffers requests are encoded in.
var bufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooled is the largest buffer returned to the pool (a request with a
// huge argument is not kept).
const maxPooled = 64 << 10

// Request is an encoded tools/call request; Bytes is valid until Free.
type Request struct{ buf *bytes.Buffer }

// Bytes returns the request's text, one line ending in a newline.
func (r Request) Bytes() []byte { return r.buf.Bytes() }

// Free returns the request's buffer to the pool.
func (r Request) Free() {
	if r.buf.Cap() <= maxPooled {
		bufs.Put(r.buf)
	}
}

// EncodeCallRequest encodes a tools/call request with the string id (which
// must need no escaping) and params p, one line as MCP's stdio transport
// sends it:
//
//	{"jsonrpc":"2.0","id":"<id>","method":"tools/call","params":<p>}\n
//
// Nil arguments are sent as {} (as the go-sdk does). Errors: p's arguments
// cannot be encoded (encoding/json's error).
func EncodeCallRequest(id string, p *mcp.CallToolParams) (Request, error) {
	buf := bufs.Get().(*bytes.Buffer)
	buf.Reset()
	buf.WriteString(`{"jsonrpc":"2.0","id":"`)
	buf.WriteString(id)
	buf.WriteString(`","method":"tools/call","params":`)
	if p.Arguments == nil {
		cp := *p
		cp.Arguments = map[string]any{}
		p = &cp
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		Request{buf}.Free()
		return Request{}, err
	}
	// Encode ended the params with a newline: the object's end goes before it.
	buf.Truncate(buf.Len() - 1)
	buf.WriteString("}\n")
	return Request{buf}, nil
}
