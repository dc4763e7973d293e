package pdk

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// Result is a tool call's result (MCP CallToolResult).
//
// On the wire it is {"content":[...], "structuredContent":{...}, "isError":bool};
// "content" is always an array, "structuredContent" is left out when nil.
type Result struct {
	// Content is the result's content blocks, in order.
	Content []Content
	// StructuredContent, when not nil, is sent as "structuredContent". It
	// must encode to a JSON object (MCP requires an object); otherwise the
	// call returns a tool error result saying so. Structured sets it.
	StructuredContent any
	// IsError marks a tool error result: the call reached the tool and
	// failed; the text tells the model why.
	IsError bool
}

// Content is one content block. Build it with TextContent, ImageContent,
// AudioContent, ResourceLink, TextResource or BlobResource; the fields used
// depend on Type.
type Content struct {
	// Type is "text", "image", "audio", "resource_link" or "resource".
	Type string
	// Text is the text of a "text" block or of a text "resource".
	Text string
	// Data is the bytes of an "image" or "audio" block or of a blob
	// "resource"; it is base64-encoded on the wire.
	Data []byte
	// MimeType is the MIME type ("image/png", "text/markdown", ...).
	MimeType string
	// URI identifies a "resource_link" or "resource".
	URI string
	// Name is a "resource_link"'s name.
	Name string
}

// TextContent returns a text block.
func TextContent(text string) Content { return Content{Type: "text", Text: text} }

// ImageContent returns an image block; data is the raw image bytes.
func ImageContent(data []byte, mimeType string) Content {
	return Content{Type: "image", Data: data, MimeType: mimeType}
}

// AudioContent returns an audio block; data is the raw audio bytes.
func AudioContent(data []byte, mimeType string) Content {
	return Content{Type: "audio", Data: data, MimeType: mimeType}
}

// ResourceLink returns a link to a resource the client may fetch itself.
// mimeType may be empty.
func ResourceLink(uri, name, mimeType string) Content {
	return Content{Type: "resource_link", URI: uri, Name: name, MimeType: mimeType}
}

// TextResource returns an embedded text resource. mimeType may be empty.
func TextResource(uri, mimeType, text string) Content {
	return Content{Type: "resource", URI: uri, MimeType: mimeType, Text: text}
}

// BlobResource returns an embedded binary resource. mimeType may be empty.
func BlobResource(uri, mimeType string, data []byte) Content {
	return Content{Type: "resource", URI: uri, MimeType: mimeType, Data: data}
}

// NewResult returns a successful result with the given content blocks.
func NewResult(content ...Content) *Result { return &Result{Content: content} }

// oneBlock is a Result with one content block, in one allocation.
type oneBlock struct {
	r Result
	c [1]Content
}

func single(c Content, isError bool) *Result {
	o := &oneBlock{c: [1]Content{c}}
	o.r.Content = o.c[:]
	o.r.IsError = isError
	return &o.r
}

// Text returns a successful result with one text block.
func Text(text string) *Result { return single(TextContent(text), false) }

// Image returns a successful result with one image block.
func Image(data []byte, mimeType string) *Result { return single(ImageContent(data, mimeType), false) }

// Errorf returns a tool error result (isError: true) whose one text block is
// the formatted message.
func Errorf(format string, args ...any) *Result {
	return single(TextContent(fmt.Sprintf(format, args...)), true)
}

// Structured returns a successful result whose structuredContent is v, and
// whose one text block is the same JSON, as the MCP spec recommends for
// clients that only read content. v must encode to a JSON object (a struct
// or a map); anything else yields a tool error result saying so.
func Structured(v any) *Result {
	b, err := json.Marshal(v)
	if err != nil {
		return Errorf("pdk.Structured: %v", err)
	}
	if !isObject(b) {
		return Errorf("pdk.Structured: structured content must be a JSON object, got %.40s", b)
	}
	return &Result{Content: []Content{TextContent(string(b))}, StructuredContent: json.RawMessage(b)}
}

func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

type wireResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError"`
}

// encode returns the wire JSON of r. A nil r is an empty success.
func (r *Result) encode() ([]byte, error) {
	if r == nil {
		r = &Result{}
	}
	var structured []byte
	if r.StructuredContent != nil {
		if raw, ok := r.StructuredContent.(json.RawMessage); ok {
			structured, _ = compactObject(raw) // nil: not the fast path
		}
		if structured == nil {
			b, err := json.Marshal(r.StructuredContent)
			if err != nil {
				return Errorf("pdk: structuredContent: %v", err).encode()
			}
			if !isObject(b) {
				return Errorf("pdk: structuredContent must be a JSON object, got %.40s", b).encode()
			}
			structured = b
		}
	}
	if out, ok := appendResult(outputBuffer(resultSize(r, structured)), r, structured); ok {
		return out, nil
	}
	// A content block of an unknown type: encoding/json reports it.
	w := wireResult{Content: r.Content, IsError: r.IsError, StructuredContent: structured}
	if w.Content == nil {
		w.Content = []Content{}
	}
	return json.Marshal(w)
}

// MarshalJSON encodes c as the MCP content block of its Type.
func (c Content) MarshalJSON() ([]byte, error) {
	switch c.Type {
	case "text":
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{c.Type, c.Text})
	case "image", "audio":
		return json.Marshal(struct {
			Type     string `json:"type"`
			Data     string `json:"data"`
			MimeType string `json:"mimeType"`
		}{c.Type, base64.StdEncoding.EncodeToString(c.Data), c.MimeType})
	case "resource_link":
		return json.Marshal(struct {
			Type     string `json:"type"`
			URI      string `json:"uri"`
			Name     string `json:"name"`
			MimeType string `json:"mimeType,omitempty"`
		}{c.Type, c.URI, c.Name, c.MimeType})
	case "resource":
		type contents struct {
			URI      string  `json:"uri"`
			MimeType string  `json:"mimeType,omitempty"`
			Text     *string `json:"text,omitempty"`
			Blob     *string `json:"blob,omitempty"`
		}
		rc := contents{URI: c.URI, MimeType: c.MimeType}
		if c.Data != nil {
			b := base64.StdEncoding.EncodeToString(c.Data)
			rc.Blob = &b
		} else {
			t := c.Text
			rc.Text = &t
		}
		return json.Marshal(struct {
			Type     string   `json:"type"`
			Resource contents `json:"resource"`
		}{c.Type, rc})
	default:
		return nil, fmt.Errorf("pdk: unknown content type %q", c.Type)
	}
}
