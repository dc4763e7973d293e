package sandbox

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
