package sandbox

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"os"
	"testing"
)

// FuzzParseWasm: the module is untrusted input; the parser and the import
// rewrite must never panic, and a rewritten module must parse to the same
// imports with only the module name changed.
func FuzzParseWasm(f *testing.F) {
	b, err := os.ReadFile(fixture(f, "counter"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x02\x05\x01\x01a\x01b\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseWasm(data)
		if err != nil {
			return
		}
		out := rewriteEnvImports(data, m, "extism:host/env", envModule)
		m2, err := parseWasm(out)
		if err != nil {
			t.Fatalf("rewritten module does not parse: %v", err)
		}
		if len(m2.Imports) != len(m.Imports) {
			t.Fatalf("imports %d -> %d", len(m.Imports), len(m2.Imports))
		}
		for i := range m.Imports {
			a, b := m.Imports[i], m2.Imports[i]
			if a.Name != b.Name || a.Kind != b.Kind || (a.Module != b.Module && !(a.Module == "extism:host/env" && b.Module == envModule)) {
				t.Fatalf("import %d: %+v -> %+v", i, a, b)
			}
		}
	})
}

// FuzzDecodeToolsOutput: guest output is untrusted; decoding never panics.
func FuzzDecodeToolsOutput(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}`))
	f.Add([]byte(`{"content":[{"type":"text","text":"x"}]}`))
	f.Add([]byte(`[]`))
	p := &Plugin{name: "fuzz"}
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeOutput(p, "list_tools", data, checkTools)
		decodeOutput[mcp.CallToolResult](p, "call_tool", data, nil)
	})
}
