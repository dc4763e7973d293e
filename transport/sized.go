package transport

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SizedCaller is an optional interface of a Transport that has a tool
// result's JSON text at hand (a plugin's output; the "result" member of a
// stdio server's JSON-RPC response) and can report its size without encoding
// the result again. When a Transport implements it, the host calls
// CallToolSized instead of CallTool for every tool call; otherwise (HTTP) it
// encodes the result with encoding/json whenever it needs the size (for the
// audit record and a server's max_output check).
//
// CallToolSized follows CallTool's contract in every respect (concurrency,
// contexts, errors, max_output) and returns the same result.
type SizedCaller interface {
	// CallToolSized is CallTool that also returns size: the length in bytes
	// of the result's JSON text as the backend produced it, insignificant
	// space and unknown members included (a plugin's output as the guest
	// wrote it; for stdio, the "result" member of the response as the server
	// wrote it, without the jsonrpc and id members), or of its encoding by
	// encoding/json for a result the Transport made itself. size is 0 when
	// err is not nil.
	CallToolSized(ctx context.Context, params *mcp.CallToolParams) (res *mcp.CallToolResult, size int, err error)
}
