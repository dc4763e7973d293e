package codemode_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/codemode"
)

// FuzzDeclarations: a backend's tool definition is hostile input; whatever
// its name, description and input schema, the declarations are produced
// without a panic, stay within their bound (plus the fixed lines), and
// cannot end the comment or the code block they are written in.
func FuzzDeclarations(f *testing.F) {
	f.Add("fs__read_file", "Read a file.", `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	f.Add("a-b", "*/ }; evil(); /*", `{"type":["string","null"],"enum":[1,"x",null]}`)
	f.Add("x", "```", `{"anyOf":[{"type":"array","items":{"type":"object","additionalProperties":{"type":"integer"}}},true,false]}`)
	f.Add("", "", `[]`)
	f.Fuzz(func(t *testing.T, name, desc, schema string) {
		tool := &mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(schema)}
		if !json.Valid([]byte(schema)) {
			tool.InputSchema = map[string]any{"type": "object"}
		}
		const max = 4 << 10
		d := codemode.Declarations([]*mcp.Tool{tool, tool}, true, max)
		if len(d) > max+2<<10 {
			t.Fatalf("%d bytes", len(d))
		}
		for _, line := range strings.Split(d, "\n") {
			if i := strings.Index(line, "/** "); i >= 0 && strings.Count(line, "*/") != 1 {
				t.Fatalf("a doc comment was ended early: %q", line)
			}
		}
		full := codemode.Tool([]*mcp.Tool{tool}, false, max)
		if strings.Count(full.Description, "```") != 2 {
			t.Fatalf("the code block was broken: %q", full.Description)
		}
	})
}

// FuzzArgs: run_code's arguments come from any client.
func FuzzArgs(f *testing.F) {
	f.Add(`{"code":"return 1"}`)
	f.Add(`{"code":null}`)
	f.Add(`{"code":"\u0000"}`)
	f.Fuzz(func(t *testing.T, raw string) {
		code, err := codemode.Args(json.RawMessage(raw))
		if err == nil && !json.Valid([]byte(raw)) {
			t.Fatalf("accepted invalid JSON %q as %q", raw, code)
		}
	})
}
