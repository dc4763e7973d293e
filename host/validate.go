package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var printer = message.NewPrinter(language.English)

// noLoader refuses every $ref outside the schema itself: a tool's schema
// comes from its backend and must not make the host read files or the
// network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema references %s: only references inside the schema are resolved", url)
}

// compileSchema compiles a tool's inputSchema or outputSchema (JSON Schema
// draft 2020-12 unless its $schema names another draft, e.g. draft-07). A nil
// schema compiles to nil (nothing to check).
// compiledTool is a tool's input and output schemas compiled, or why they
// do not compile.
type compiledTool struct {
	in, out *jsonschema.Schema
	err     error
}

// compileTool compiles t's schemas; name is its catalogue name.
func compileTool(name string, t *mcp.Tool) compiledTool {
	in, err := compileSchema(name, "inputSchema", t.InputSchema)
	var out *jsonschema.Schema
	if err == nil {
		out, err = compileSchema(name, "outputSchema", t.OutputSchema)
	}
	return compiledTool{in, out, err}
}

// compileTools compiles the schemas of a backend's tools (its own names;
// prefix makes their catalogue names), stopping with ctx's error when it
// is done: a start compiles under its startup_timeout, so a backend with
// a huge catalogue cannot stall the host past it (a list is capped at
// transport.MaxTools tools).
func compileTools(ctx context.Context, prefix string, tools []*mcp.Tool) (map[string]compiledTool, error) {
	out := make(map[string]compiledTool, len(tools))
	for i, t := range tools {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("compiling the schemas of %d tools: %w", len(tools), err)
			}
		}
		out[t.Name] = compileTool(catalogueName(prefix, t.Name), t)
	}
	return out, nil
}

func compileSchema(tool, which string, schema any) (*jsonschema.Schema, error) {
	if schema == nil {
		return nil, nil
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", which, err)
	}
	if string(raw) == "null" {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", which, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	url := "toolhost:///" + tool + "/" + which + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("%s: %w", which, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("%s does not compile: %w", which, err)
	}
	return s, nil
}

// argsJSON is rawArgs without its check that the text is valid JSON where
// that check would be done twice: for a call that decodes its arguments
// (decodes true), the decoder finds invalid text (and argsError words the
// error as rawArgs does), and text made by json.Marshal is valid by
// construction. It returns the JSON text of args's object ("{}" for none);
// its errors, and the text returned with them, are rawArgs's.
func argsJSON(args any, decodes bool) ([]byte, error) {
	var raw []byte
	switch a := args.(type) {
	case json.RawMessage:
		raw = a
	case []byte:
		raw = a
	case string:
		raw = []byte(a)
	case nil:
		return rawArgs(args)
	default:
		if b, err := json.Marshal(a); err == nil && len(b) > 0 && b[0] == '{' {
			return b, nil
		}
		// null, another kind of value, or no JSON at all.
		return rawArgs(args)
	}
	if !decodes {
		return rawArgs(args)
	}
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
		return t, nil
	}
	return rawArgs(args)
}

// argsError is the error of arguments given as text that argsJSON accepted
// but the decoder rejected (derr): rawArgs's error for them.
func argsError(args any, derr error) error {
	if _, err := rawArgs(args); err != nil {
		return err
	}
	return fmt.Errorf("%w: %v", ErrInvalidArguments, derr)
}

// describeInvalid turns a validation error into "FIELD: WHY" lines, FIELD a
// dotted path into the value ("user.age", "items[2]"; "(arguments)" or
// "(structuredContent)" for the value itself).
func describeInvalid(root string, err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var msgs []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			msgs = append(msgs, fieldPath(root, e.InstanceLocation)+": "+e.ErrorKind.LocalizedString(printer))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(msgs) > 5 {
		msgs = append(msgs[:5], fmt.Sprintf("(%d more)", len(msgs)-5))
	}
	return strings.Join(msgs, "; ")
}

func fieldPath(root string, loc []string) string {
	if len(loc) == 0 {
		return "(" + root + ")"
	}
	var b strings.Builder
	for i, p := range loc {
		if p != "" && strings.Trim(p, "0123456789") == "" {
			b.WriteString("[" + p + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

// maxJSONDepth is encoding/json's limit on nested arrays and objects.
const maxJSONDepth = 10000

// decodeJSON decodes the JSON text b as jsonschema.UnmarshalJSON does, the
// form the validator takes: objects as map[string]any (the last of
// duplicate keys wins), arrays as []any, numbers as json.Number (as sent),
// strings with encoding/json's unescaping (invalid UTF-8 becomes U+FFFD). It
// refuses exactly the text that function refuses: anything but one JSON
// value with optional space around it, or nesting deeper than 10000. It does
// in one pass what jsonschema.UnmarshalJSON does in three (the json.Decoder
// scans the value, decodes it scanning again, then looks for a second
// value): on a small argument object about a third of the time and half
// the allocations.
func decodeJSON(b []byte) (any, error) {
	p := jsonParser{s: b}
	p.space()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		return nil, p.fail("after top-level value")
	}
	return v, nil
}

// jsonParser is decodeJSON's state: the text and the offset of the next byte.
type jsonParser struct {
	s     []byte
	i     int
	depth int
}

func (p *jsonParser) fail(where string) error {
	if p.i >= len(p.s) {
		return fmt.Errorf("unexpected end of JSON input")
	}
	return fmt.Errorf("invalid character %q at offset %d %s", p.s[p.i], p.i, where)
}

func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// next skips space and returns the next byte (0 at the end).
func (p *jsonParser) next() byte {
	p.space()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *jsonParser) value() (any, error) {
	if p.i >= len(p.s) {
		return nil, p.fail("")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, p.fail("looking for beginning of value")
}

func (p *jsonParser) literal(lit string) error {
	if len(p.s)-p.i < len(lit) || string(p.s[p.i:p.i+len(lit)]) != lit {
		for k := 0; k < len(lit) && p.i < len(p.s) && p.s[p.i] == lit[k]; k++ {
			p.i++
		}
		return p.fail("in literal " + lit)
	}
	p.i += len(lit)
	return nil
}

func (p *jsonParser) enter() error {
	p.depth++
	if p.depth > maxJSONDepth {
		return fmt.Errorf("exceeded max depth (%d)", maxJSONDepth)
	}
	p.i++ // '{' or '['
	return nil
}

func (p *jsonParser) object() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	m := make(map[string]any)
	if p.next() == '}' {
		p.i++
		p.depth--
		return m, nil
	}
	for {
		if p.next() != '"' {
			return nil, p.fail("looking for beginning of object key string")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		if p.next() != ':' {
			return nil, p.fail("after object key")
		}
		p.i++
		p.space()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		m[k] = v
		switch p.next() {
		case ',':
			p.i++
		case '}':
			p.i++
			p.depth--
			return m, nil
		default:
			return nil, p.fail("after object key:value pair")
		}
	}
}

func (p *jsonParser) array() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	a := make([]any, 0)
	if p.next() == ']' {
		p.i++
		p.depth--
		return a, nil
	}
	for {
		p.space()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		switch p.next() {
		case ',':
			p.i++
		case ']':
			p.i++
			p.depth--
			return a, nil
		default:
			return nil, p.fail("after array element")
		}
	}
}

// str decodes the string starting at p.i (a '"'). Strings of printable ASCII
// without escapes are copied; any other is checked here and unescaped by
// encoding/json, so that its rules (surrogates, invalid UTF-8) apply as they
// are.
func (p *jsonParser) str() (string, error) {
	start := p.i
	j := start + 1
	for ; j < len(p.s); j++ {
		c := p.s[j]
		if c == '"' {
			p.i = j + 1
			return string(p.s[start+1 : j]), nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
	}
	for ; j < len(p.s); j++ {
		switch c := p.s[j]; {
		case c == '"':
			var s string
			if err := json.Unmarshal(p.s[start:j+1], &s); err != nil {
				return "", err
			}
			p.i = j + 1
			return s, nil
		case c < 0x20:
			p.i = j
			return "", p.fail("in string literal")
		case c == '\\':
			j++
			if j >= len(p.s) {
				p.i = j
				return "", p.fail("")
			}
			switch p.s[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for k := 0; k < 4; k++ {
					j++
					if j >= len(p.s) || !isHex(p.s[j]) {
						p.i = j
						return "", p.fail("in \\u hexadecimal character escape")
					}
				}
			default:
				p.i = j
				return "", p.fail("in string escape code")
			}
		}
	}
	p.i = j
	return "", p.fail("")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? (RFC 8259
// section 6) as a json.Number.
func (p *jsonParser) number() (any, error) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.s) && p.s[p.i] == '0':
		p.i++
	case p.digits() == 0:
		return nil, p.fail("in numeric literal")
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return nil, p.fail("after decimal point in numeric literal")
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return nil, p.fail("in exponent of numeric literal")
		}
	}
	return json.Number(p.s[start:p.i]), nil
}

func (p *jsonParser) digits() int {
	n := 0
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}
