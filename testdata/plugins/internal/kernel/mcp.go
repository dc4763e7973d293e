package kernel

import "strings"

// Quote returns s as a JSON string literal.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20:
			const hex = "0123456789abcdef"
			b.WriteString(`\u00`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Field returns the string value of the first "key":"value" pair in a JSON
// document. It is deliberately naive (fixtures avoid encoding/json to stay
// small): values must not contain escaped quotes.
func Field(doc, key string) string {
	k := `"` + key + `"`
	i := strings.Index(doc, k)
	if i < 0 {
		return ""
	}
	rest := strings.TrimLeft(doc[i+len(k):], " \t\r\n:")
	if !strings.HasPrefix(rest, `"`) {
		return ""
	}
	rest = rest[1:]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return rest[:j]
}

// Text returns a CallToolResult JSON with one text content.
func Text(s string, isError bool) string {
	e := ""
	if isError {
		e = `,"isError":true`
	}
	return `{"content":[{"type":"text","text":` + Quote(s) + `}]` + e + `}`
}

// Tools returns a list_tools result JSON for the named tools (object schemas
// without properties).
func Tools(names ...string) string {
	var b strings.Builder
	b.WriteString(`{"tools":[`)
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":` + Quote(n) + `,"description":"fixture tool ` + n + `","inputSchema":{"type":"object"}}`)
	}
	b.WriteString(`]}`)
	return b.String()
}
