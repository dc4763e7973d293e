package gateway

//lint:file-ignore SA1019 logging is deprecated as of protocol 2026-07-28 (SEP-2577) but clients and servers still use it

import (
	"cmp"
	"context"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logLevels remembers the level each client session of one profile server
// set with logging/setLevel (MCP 2025-11-25 server/utilities/logging), so
// that a call of that client asks its backend for log messages at that
// level (host.WithLog) and the gateway relays them. The go-sdk keeps the
// level but does not export it. Entries of sessions that have ended are
// dropped at the next logging/setLevel, so the map holds at most the live
// sessions plus those ended since.
type logLevels struct {
	mu     sync.Mutex
	levels map[*mcp.ServerSession]mcp.LoggingLevel
}

// track is a receiving middleware that notes every accepted
// logging/setLevel.
func (ps *profileServer) trackLevels(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "logging/setLevel" || err != nil {
			return res, err
		}
		p, _ := req.GetParams().(*mcp.SetLoggingLevelParams)
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if p == nil || ss == nil {
			return res, err
		}
		live := map[*mcp.ServerSession]bool{}
		for s := range ps.srv.Sessions() {
			live[s] = true
		}
		l := &ps.levels
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.levels == nil {
			l.levels = map[*mcp.ServerSession]mcp.LoggingLevel{}
		}
		for s := range l.levels {
			if !live[s] {
				delete(l.levels, s)
			}
		}
		l.levels[ss] = p.Level
		return res, err
	}
}

// logLevel returns the level the client of req wants log messages at: the
// request's own (io.modelcontextprotocol/logLevel in _meta, protocol
// 2026-07-28, SEP-2575), else the one its session set; "" when it asked for
// none (a go-sdk server then sends none either).
func (ps *profileServer) logLevel(req *mcp.CallToolRequest) mcp.LoggingLevel {
	if req.Params != nil {
		if l, ok := req.Params.Meta[mcp.MetaKeyLogLevel].(string); ok && l != "" {
			return mcp.LoggingLevel(l)
		}
	}
	if req.Session == nil {
		return ""
	}
	ps.levels.mu.Lock()
	defer ps.levels.mu.Unlock()
	if l, ok := ps.levels.levels[req.Session]; ok {
		return l
	}
	return ps.statelessLevel
}

// severity orders the MCP log levels (RFC 5424's, MCP 2025-11-25
// server/utilities/logging) as the go-sdk does (mcp.LevelDebug ...
// mcp.LevelEmergency, slog levels; a name it does not know counts as
// debug).
var severity = map[mcp.LoggingLevel]slog.Level{
	"debug": mcp.LevelDebug, "info": mcp.LevelInfo, "notice": mcp.LevelNotice, "warning": mcp.LevelWarning,
	"error": mcp.LevelError, "critical": mcp.LevelCritical, "alert": mcp.LevelAlert, "emergency": mcp.LevelEmergency,
}

// compareLevels is cmp.Compare of the severities of a and b (the go-sdk's
// compareLevels, v1.8.0).
func compareLevels(a, b mcp.LoggingLevel) int {
	sa, ok := severity[a]
	if !ok {
		sa = mcp.LevelDebug
	}
	sb, ok := severity[b]
	if !ok {
		sb = mcp.LevelDebug
	}
	return cmp.Compare(sa, sb)
}
