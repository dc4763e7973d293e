package gateway

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
)

// withIdempotencyKey returns ctx with the idempotency key a tools/call
// carries in its _meta (host.MetaIdempotencyKey, issue 25 item 5), or the
// isError result (kind invalid_arguments) that answers a key that is not a
// string or that host.CheckIdempotencyKey refuses. A call without the key
// gets ctx as it is.
func withIdempotencyKey(ctx context.Context, meta mcp.Meta) (context.Context, *mcp.CallToolResult) {
	v, ok := meta[host.MetaIdempotencyKey]
	if !ok || v == nil {
		return ctx, nil
	}
	key, ok := v.(string)
	if !ok {
		return ctx, errorResult(fmt.Errorf("%w: _meta[%q] must be a string", host.ErrInvalidArguments, host.MetaIdempotencyKey))
	}
	if err := host.CheckIdempotencyKey(key); err != nil {
		return ctx, errorResult(err)
	}
	return host.WithIdempotencyKey(ctx, key), nil
}
