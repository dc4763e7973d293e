package codemode

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/lazyre"
)

// DefaultMaxDeclarations bounds the TypeScript declarations in run_code's
// description, in bytes.
const DefaultMaxDeclarations = 24 << 10

// Limits of one declaration: deeper schemas become "any", longer
// descriptions are cut.
const (
	maxSchemaDepth = 4
	maxDocLen      = 160
	maxProps       = 40
	maxEnum        = 12
)

// Tool returns run_code's definition for a client whose catalogue is
// tools: its description ends with the tools as TypeScript declarations
// (Declarations, at most maxDecl bytes; 0 means DefaultMaxDeclarations),
// so a model writes calls with the right argument shapes.
func Tool(tools []*mcp.Tool, search bool, maxDecl int) *mcp.Tool {
	var b strings.Builder
	b.WriteString("Run a JavaScript program in a sandbox (no network, no files, no timers). The code is the body of an async function: " +
		"use await, and return the value you want back. Call tools with `await tools.NAME(args)` (or `await callTool(\"NAME\", args)`); " +
		"each returns the tool's CallToolResult. A call that is refused (policy, invalid arguments, limits) throws an Error with a .code. " +
		"console.log output and the returned value (as JSON) are the result; intermediate results stay out of the conversation.")
	if search {
		b.WriteString(" Find more tools with `await searchTools(query, limit)`.")
	}
	b.WriteString("\n\n```ts\n")
	b.WriteString(Declarations(tools, search, maxDecl))
	b.WriteString("```")
	return &mcp.Tool{
		Name:        ToolName,
		Title:       "Run JavaScript (code mode)",
		Description: b.String(),
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"code": map[string]any{"type": "string", "description": "The program: the body of an async function."},
			},
			"required":             []any{"code"},
			"additionalProperties": false,
		},
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(true)},
	}
}

var identRE = lazyre.New(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// key is a property or method name as TypeScript writes it.
func key(name string) string {
	if identRE.MatchString(name) {
		return name
	}
	return literal(name)
}

// literal is v as a TypeScript literal (its JSON), with backticks escaped
// (they occur only inside strings) so that no value can close the
// description's code block.
func literal(v any) string {
	b, _ := json.Marshal(v)
	return strings.ReplaceAll(string(b), "`", `\u0060`)
}

// Declarations renders tools as TypeScript:
//
//	interface CallToolResult { ... }
//	declare const tools: {
//	  /** Read a file. */
//	  fs__read_file(args: {path: string}): Promise<CallToolResult>;
//	};
//	declare function callTool(name: string, args?: object): Promise<CallToolResult>;
//
// Argument types come from each input schema (types, properties,
// required, enums, arrays, anyOf/oneOf; deeper than 4 levels: any). At
// most maxBytes (0: DefaultMaxDeclarations): the tools that do not fit are
// named in a closing comment, callable all the same.
func Declarations(tools []*mcp.Tool, search bool, maxBytes int) string {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxDeclarations
	}
	sorted := slices.Clone(tools)
	slices.SortFunc(sorted, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	b.WriteString("interface CallToolResult { content: Array<{type: string; text?: string; [k: string]: unknown}>; structuredContent?: any; isError?: boolean }\n")
	b.WriteString("declare const tools: {\n")
	var left []string
	for _, t := range sorted {
		var d strings.Builder
		if doc := docLine(t); doc != "" {
			fmt.Fprintf(&d, "  /** %s */\n", doc)
		}
		fmt.Fprintf(&d, "  %s(args: %s): Promise<CallToolResult>;\n", key(t.Name), argsType(t.InputSchema))
		if len(left) > 0 || b.Len()+d.Len() > maxBytes {
			left = append(left, t.Name)
			continue
		}
		b.WriteString(d.String())
	}
	b.WriteString("};\n")
	if len(left) > 0 {
		names := strings.Join(left, ", ")
		if len(names) > maxBytes/4 {
			names = names[:maxBytes/4] + "…"
		}
		fmt.Fprintf(&b, "// %d more tools, not declared here (the description's limit): %s\n", len(left), names)
	}
	b.WriteString("declare function callTool(name: string, args?: object): Promise<CallToolResult>;\n")
	b.WriteString("declare const console: { log(...a: unknown[]): void; info(...a: unknown[]): void; warn(...a: unknown[]): void; error(...a: unknown[]): void };\n")
	if search {
		b.WriteString("declare function searchTools(query: string, limit?: number): Promise<Array<{name: string; title?: string; description?: string; inputSchema: object}>>;\n")
	}
	return b.String()
}

// docLine is the tool's title or description, one line, bounded, with no
// comment terminator.
func docLine(t *mcp.Tool) string {
	s := t.Description
	if s == "" {
		s = t.Title
	}
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "*/", "* /")
	s = strings.ReplaceAll(s, "`", "'") // nor the code block
	if len(s) > maxDocLen {
		i := maxDocLen
		for i > 0 && !utf8Start(s[i]) {
			i--
		}
		s = s[:i] + "…"
	}
	return s
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }

// argsType is the TypeScript type of an input schema (any JSON value the
// tool definition holds).
func argsType(schema any) string {
	var m map[string]any
	switch s := schema.(type) {
	case map[string]any:
		m = s
	default:
		b, err := json.Marshal(schema)
		if err != nil || json.Unmarshal(b, &m) != nil {
			return "object"
		}
	}
	if m == nil {
		return "object"
	}
	return tsType(m, 0)
}

func tsType(v any, depth int) string {
	m, ok := v.(map[string]any)
	if !ok {
		if b, ok := v.(bool); ok && !b {
			return "never"
		}
		return "any"
	}
	if depth > maxSchemaDepth {
		return "any"
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 && len(e) <= maxEnum {
		parts := make([]string, 0, len(e))
		for _, x := range e {
			parts = append(parts, literal(x))
		}
		return strings.Join(parts, " | ")
	}
	if c, ok := m["const"]; ok {
		return literal(c)
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := m[k].([]any); ok && len(alts) > 0 && len(alts) <= maxEnum {
			parts := make([]string, 0, len(alts))
			for _, a := range alts {
				parts = append(parts, tsType(a, depth+1))
			}
			return strings.Join(slices.Compact(parts), " | ")
		}
	}
	switch t := m["type"].(type) {
	case string:
		return single(t, m, depth)
	case []any:
		parts := make([]string, 0, len(t))
		for _, x := range t {
			if s, ok := x.(string); ok {
				parts = append(parts, single(s, m, depth))
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, " | ")
		}
	}
	if _, ok := m["properties"]; ok {
		return single("object", m, depth)
	}
	return "any"
}

func single(t string, m map[string]any, depth int) string {
	switch t {
	case "string":
		return "string"
	case "number", "integer":
		return "number"
	case "boolean":
		return "boolean"
	case "null":
		return "null"
	case "array":
		item := "any"
		if it, ok := m["items"]; ok {
			item = tsType(it, depth+1)
		}
		if strings.ContainsAny(item, " |") {
			item = "(" + item + ")"
		}
		return item + "[]"
	case "object":
		props, _ := m["properties"].(map[string]any)
		req := map[string]bool{}
		if r, ok := m["required"].([]any); ok {
			for _, x := range r {
				if s, ok := x.(string); ok {
					req[s] = true
				}
			}
		}
		if len(props) == 0 {
			if ap, ok := m["additionalProperties"].(map[string]any); ok {
				return "Record<string, " + tsType(ap, depth+1) + ">"
			}
			return "{}"
		}
		names := slices.Sorted(maps.Keys(props))
		parts := make([]string, 0, len(names))
		for i, n := range names {
			if i == maxProps {
				parts = append(parts, "[k: string]: any")
				break
			}
			opt := "?"
			if req[n] {
				opt = ""
			}
			parts = append(parts, key(n)+opt+": "+tsType(props[n], depth+1))
		}
		return "{" + strings.Join(parts, "; ") + "}"
	}
	return "any"
}
