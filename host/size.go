package host

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/transport"
)

// callSized calls the tool p.Name on tr and returns its result with size,
// the length in bytes of the result's JSON text. A Transport that implements
// transport.SizedCaller (a plugin) reports the size of the text it decoded;
// for any other, the result is encoded with encoding/json to measure it, and
// only when need is true (size is 0 otherwise). A result that cannot be
// encoded is an error.
func callSized(ctx context.Context, tr transport.Transport, p *mcp.CallToolParams, need bool) (res *mcp.CallToolResult, size int, err error) {
	if sc, ok := tr.(transport.SizedCaller); ok {
		return sc.CallToolSized(ctx, p)
	}
	res, err = tr.CallTool(ctx, p)
	if err != nil || !need {
		return res, 0, err
	}
	enc, err := json.Marshal(res)
	if err != nil {
		return nil, 0, fmt.Errorf("encoding the result: %w", err)
	}
	return res, len(enc), nil
}
