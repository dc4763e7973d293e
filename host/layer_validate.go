package host

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/transport"
)

// validateLayer checks a tools/call both ways. On the way in: arguments
// that are not a JSON object are ErrInvalidArguments (outcome.argsRefused),
// and arguments that do not match the tool's inputSchema make a result
// with IsError set naming each wrong field (MCP 2025-11-25, server/tools:
// input validation errors are tool errors; outcome.invalid; its _meta
// says {"io.toolhost/error": "invalid_arguments"}); the backend
// is not called. On the way back (the tool's own result, not its
// fallback's): a result whose JSON encoding exceeds the backend's
// max_output is transport.ErrOutputTooLarge, and structuredContent that
// does not match the tool's outputSchema is ErrInvalidOutput. Validation
// is off in benchmarks that measure without it (noValidate).
func validateLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		e := o.dst.entry
		check := e.in != nil && !h.noValidate
		var val any
		var err error
		if check {
			val, err = o.req.args.value()
		} else {
			_, err = o.req.args.text()
		}
		if err != nil {
			o.out.argsRefused = true
			return nil, err
		}
		if check {
			if verr := e.in.Validate(val); verr != nil {
				o.out.invalid = fmt.Sprintf("invalid arguments for %s: %s", o.req.name, describeInvalid("arguments", verr))
				return KindResult(KindInvalidArguments, o.out.invalid), nil
			}
		}
		r, err := next(ctx, o)
		if err != nil || o.out.fallback != "" {
			return r, err
		}
		res := r.(*mcp.CallToolResult)
		if size := o.out.size; e.b.maxOutput > 0 && size > e.b.maxOutput {
			// A backend of Host.Add has no [servers.NAME] table: its
			// limit is BackendOptions.MaxOutput.
			limit := fmt.Sprintf("max_output (%d bytes) of [servers.%s]", e.b.maxOutput, e.b.name)
			if e.b.kind == KindCustom {
				limit = fmt.Sprintf("BackendOptions.MaxOutput (%d bytes) of backend %q", e.b.maxOutput, e.b.name)
			}
			return nil, fmt.Errorf("result of %d bytes exceeds %s: %w; raise it or ask for less", size, limit, transport.ErrOutputTooLarge)
		}
		if e.out != nil && !h.noValidate && !res.IsError && res.StructuredContent != nil {
			if verr := e.out.Validate(structured(res.StructuredContent)); verr != nil {
				return nil, fmt.Errorf("%w: %s", ErrInvalidOutput, describeInvalid("structuredContent", verr))
			}
		}
		return res, nil
	}
}
