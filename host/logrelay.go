package host

//lint:file-ignore SA1019 logging, sampling and roots are deprecated as of protocol 2026-07-28 (SEP-2577) but clients and servers still use them

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/transport"
)

// WithLog returns a context that asks for the log messages an MCP server
// sends during the tool calls made with it (CallTool, View.CallTool), at
// level and above (MCP 2025-11-25 server/utilities/logging; RFC 5424
// severities, debug lowest): f is called for each while the call is in
// flight (also for a retry or a fallback within it). f must be quick and
// must not block: it runs on the connection's goroutine. A message reaches
// f only when the server ties it to this call (protocol 2026-07-28 and
// later, per-request level) or this call is the only one in flight on its
// backend; see transport.WithLog. Every message still goes to the backend's
// logger. Wasm plugins' logs go to the logger only.
func WithLog(ctx context.Context, level mcp.LoggingLevel, f func(*mcp.LoggingMessageParams)) context.Context {
	return transport.WithLog(ctx, level, f)
}
