package host

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/transport"
)

// checkHealth runs one health check of b. checkErr is the check's own
// failure; lost wraps ErrUnhealthy once health_threshold consecutive checks
// have failed (the caller then takes the connection down).
func (b *backend) checkHealth(tr transport.Transport) (checkErr, lost error) {
	if b.sv.HealthCheck == config.HealthNone {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(b.ctx, b.sv.HealthTimeout.Std())
	defer cancel()
	var err error
	switch b.sv.HealthCheck {
	case config.HealthPing:
		err = tr.Ping(ctx)
	case config.HealthTool:
		var res *mcp.CallToolResult
		args := b.sv.HealthArgs
		if args == nil {
			args = map[string]any{}
		}
		res, err = tr.CallTool(ctx, &mcp.CallToolParams{Name: b.sv.HealthTool, Arguments: args})
		if err == nil && res.IsError {
			err = fmt.Errorf("health tool %q returned a tool error: %s", b.sv.HealthTool, resultText(res))
		}
	}
	if b.ctx.Err() != nil {
		return ErrClosed, nil
	}
	b.mu.Lock()
	b.healthAt = time.Now()
	was := b.healthFails
	if err != nil {
		b.healthFails++
		b.healthErr = err
	} else {
		b.healthFails, b.healthErr = 0, nil
	}
	n := b.healthFails
	b.mu.Unlock()
	switch {
	case err != nil:
		b.logger.Warn("health check failed", "failures", n, "threshold", b.sv.HealthThreshold, "error", err)
		b.hooks.emit(Event{Kind: EventHealth, Backend: b.name, Err: err})
		if n >= b.sv.HealthThreshold {
			return err, fmt.Errorf("%w: %d consecutive health checks failed, the last: %w", ErrUnhealthy, n, err)
		}
	case was > 0:
		b.hooks.emit(Event{Kind: EventHealth, Backend: b.name})
	}
	return err, nil
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return clip(strings.Join(parts, " "), 200)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// CheckHealth runs backend name's configured health check now (an MCP
// ping, or its health_tool call, within health_timeout) on its supervisor
// goroutine, and returns the check's own error, or nil if it passed. The
// result counts like a periodic check: it updates BackendStatus.Health, and
// the health_threshold-th consecutive failure restarts the backend. With
// health_check = "none" it returns nil without contacting the backend.
// Other errors: ErrUnknownBackend; ErrBackendUnavailable when the backend
// is not ready (idle, starting, restarting, failed); ErrClosed; ctx's error.
func (h *Host) CheckHealth(ctx context.Context, name string) error {
	return h.ask(ctx, name, func(b *backend) chan chan error { return b.healthReq }, nil)
}

// Health of a backend, as in BackendStatus.Health.
const (
	HealthOK      = "ok"      // the last check passed
	HealthFailing = "failing" // the last HealthFailures checks failed
	HealthUnknown = "unknown" // not checked since it became ready
	HealthOff     = "off"     // health_check = "none"
)
