package host

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/transport"
)

// validateLayer checks a tools/call both ways. On the way in: arguments
// that are not a JSON object are ErrInvalidArguments, and arguments that do
// not match the tool's inputSchema make a result with IsError set naming
// each wrong field (MCP 2025-11-25, server/tools: input validation errors
// are tool errors); the backend is not called. On the way back (the tool's
// own result, not its fallback's): a result whose JSON encoding exceeds the
// backend's max_output is transport.ErrOutputTooLarge, and structuredContent
// that does not match the tool's outputSchema is ErrInvalidOutput.
// Validation is off in benchmarks that measure without it (noValidate).
func validateLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		if o.method != methodCallTool {
			return next(ctx, o)
		}
		e := o.e
		check := e.in != nil && !h.noValidate
		if o.raw == nil && o.argErr == nil {
			o.raw, o.argErr = argsJSON(o.args, check)
		}
		if o.argErr != nil {
			if o.rec != nil {
				o.rec.ArgsHMAC = h.audit.hashArgs(o.raw)
			}
			return nil, fmt.Errorf("%s: %w", o.name, o.argErr)
		}
		if check || o.rec != nil {
			if derr := o.decode(h); derr != nil {
				return nil, fmt.Errorf("%s: %w", o.name, derr)
			}
			if check {
				if verr := e.in.Validate(o.val); verr != nil {
					o.invalid = fmt.Sprintf("invalid arguments for %s: %s", o.name, describeInvalid("arguments", verr))
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: o.invalid}}}, nil
				}
			}
		}
		r, err := next(ctx, o)
		if err != nil || o.fellBack {
			return r, err
		}
		res := r.(*mcp.CallToolResult)
		if o.rec != nil {
			o.rec.ResultBytes = o.size
		}
		if e.b.maxOutput > 0 && o.size > e.b.maxOutput {
			// A backend of Host.Add has no [servers.NAME] table: its
			// limit is BackendOptions.MaxOutput.
			limit := fmt.Sprintf("max_output (%d bytes) of [servers.%s]", e.b.maxOutput, e.b.name)
			if e.b.kind == KindCustom {
				limit = fmt.Sprintf("BackendOptions.MaxOutput (%d bytes) of backend %q", e.b.maxOutput, e.b.name)
			}
			return nil, fmt.Errorf("%s: result of %d bytes exceeds %s: %w; raise it or ask for less",
				o.name, o.size, limit, transport.ErrOutputTooLarge)
		}
		if e.out != nil && !h.noValidate && !res.IsError && res.StructuredContent != nil {
			if verr := e.out.Validate(structured(res.StructuredContent)); verr != nil {
				return nil, fmt.Errorf("%s: %w: %s", o.name, ErrInvalidOutput, describeInvalid("structuredContent", verr))
			}
		}
		return res, nil
	}
}
