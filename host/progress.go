package host

import (
	"context"

	"github.com/toolhost/toolhost/transport"
)

// Progress is one progress report of a tool call in flight (MCP 2025-11-25,
// basic/utilities/progress): Progress so far, Total when known (0: not
// known) and an optional Message, as the server sent them.
type Progress = transport.Progress

// WithProgress returns a context that asks for the progress of the tool
// calls made with it (CallTool, View.CallTool): the call to an MCP server
// carries a _meta.progressToken, and f is called for each
// notifications/progress the server sends for it while the call is in
// flight (also for a retry or a fallback made within the call; never after
// CallTool returns, so a report that arrives with the result may be
// dropped). f must be quick and must not block: it runs on the connection's
// goroutine.
// Servers need not send progress; Wasm plugins never do.
func WithProgress(ctx context.Context, f func(Progress)) context.Context {
	return transport.WithProgress(ctx, f)
}
