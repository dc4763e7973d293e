package transport

//lint:file-ignore SA1019 logging, sampling and roots are deprecated as of protocol 2026-07-28 (SEP-2577) but servers still use them

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ClientOptions are what toolhost's MCP client offers a server besides its
// tools, resources and prompts (MCP 2025-11-25, client features and
// server/utilities/logging). The zero value offers nothing: no client
// capability is declared, and no log level is set.
//
// Handlers run on the connection's goroutine for the server's request; they
// may block (the server waits for the answer) but must return when ctx is
// done. When the request can be tied to a tools/call in flight on this
// transport (see CallContext), ctx is that call's context (its values and
// deadline), also cancelled when the server cancels its request; otherwise it
// is the connection's context for the request.
type ClientOptions struct {
	// LogLevel, when set, is sent with logging/setLevel right after
	// initialize (and after every re-initialization) to a server that
	// declares the logging capability; one of debug, info, notice,
	// warning, error, critical, alert, emergency (RFC 5424 severities).
	// A server that refuses it is logged at Warn and stays up. Empty:
	// nothing is sent (servers choose; go-sdk servers then send no logs).
	LogLevel mcp.LoggingLevel

	// Elicit, when set, answers elicitation/create (MCP 2025-11-25,
	// client/elicitation), and the elicitation capability (form mode) is
	// declared. The go-sdk checks the requested schema before and the
	// accepted content against it after.
	Elicit func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error)

	// Sample, when set, answers sampling/createMessage (MCP 2025-11-25,
	// client/sampling), and the sampling capability is declared.
	Sample func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)

	// Roots, when not empty, are answered to roots/list (MCP 2025-11-25,
	// client/roots), and the roots capability is declared (without
	// listChanged: the list is fixed for the transport's life).
	Roots []*mcp.Root

	// ListRoots, when set, answers roots/list first (MCP 2025-11-25,
	// client/roots), with ctx as for Elicit; when it returns ok false
	// (nothing to say for this request), Roots are answered. The roots
	// capability is then declared even while Roots is empty.
	ListRoots func(ctx context.Context) (roots []*mcp.Root, ok bool, err error)

	// ProtocolVersion, when set, is the protocol version offered to the
	// server in initialize (the server may answer with an older one it
	// prefers); empty: the go-sdk's latest. See ProtocolClassic for why a
	// client that answers elicitation, sampling or roots may want
	// 2025-11-25.
	ProtocolVersion string
}

// callSet tracks the tools/call contexts in flight on one transport, so that
// a server request (elicitation, sampling) sent while exactly one call is in
// flight can be tied to it. MCP gives a client no other link over stdio
// before protocol 2026-07-28, where such requests come inside the call's own
// result (multi round-trip requests) and carry its context directly.
type callSet struct {
	mu    sync.Mutex
	next  uint64
	calls map[uint64]context.Context
	// tapped: log messages are relayed (WithLog) as the transport reads
	// them (tapLog), not by the go-sdk's handler.
	tapped bool
}

func (c *callSet) add(ctx context.Context) (done func()) {
	if c == nil {
		return func() {}
	}
	c.mu.Lock()
	c.next++
	id := c.next
	if c.calls == nil {
		c.calls = map[uint64]context.Context{}
	}
	c.calls[id] = ctx
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.calls, id)
		c.mu.Unlock()
	}
}

// only returns the single call in flight, or nil when there are none or
// several.
func (c *callSet) only() context.Context {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.calls) != 1 {
		return nil
	}
	for _, ctx := range c.calls {
		return ctx
	}
	return nil
}

type callKey struct{}

// CallContext reports whether ctx, as passed to a ClientOptions handler, is
// (derived from) the context of a tools/call made through a Transport of
// this package: true when the server's request came inside the call
// (protocol 2026-07-28 and later) or arrived while that call was the only
// one in flight on its transport. The caller of CallTool stores what
// identifies its call in ctx and reads it back from the handler's ctx.
func CallContext(ctx context.Context) bool {
	v, _ := ctx.Value(callKey{}).(bool)
	return v
}

// inCall returns the context a handler runs in for a server request with
// context rctx: the call's own when it can be told (see CallContext),
// cancelled also when rctx is; otherwise rctx.
func (c *callSet) inCall(rctx context.Context) (context.Context, context.CancelFunc) {
	if CallContext(rctx) {
		return rctx, func() {}
	}
	cc := c.only()
	if cc == nil {
		return rctx, func() {}
	}
	ctx, cancel := context.WithCancel(cc)
	stop := context.AfterFunc(rctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// Bounds on a server's log notification as it reaches the logger.
const (
	maxLogText   = 4096
	maxLogLogger = 64
)

// logServerMessage writes a notifications/message to logger at the hclog
// level matching its MCP level (debug: Debug; info and notice: Info;
// warning: Warn; error, critical, alert and emergency: Error; anything else:
// Info), with its text bounded and control characters escaped.
func logServerMessage(logger hclog.Logger, p *mcp.LoggingMessageParams) {
	if p == nil {
		return
	}
	var text string
	switch d := p.Data.(type) {
	case string:
		text = d
	default:
		b, err := json.Marshal(d)
		if err != nil {
			text = "(unprintable)"
		} else {
			text = string(b)
		}
	}
	args := []any{"level", safeText(string(p.Level), 16), "data", safeText(text, maxLogText)}
	if p.Logger != "" {
		args = append(args, "logger", safeText(p.Logger, maxLogLogger))
	}
	logger.Log(hclogLevel(p.Level), "server log", args...)
}

func hclogLevel(l mcp.LoggingLevel) hclog.Level {
	switch l {
	case "debug":
		return hclog.Debug
	case "info", "notice":
		return hclog.Info
	case "warning":
		return hclog.Warn
	case "error", "critical", "alert", "emergency":
		return hclog.Error
	}
	return hclog.Info
}

// safeText returns s cut to at most n bytes (on a rune boundary, "…"
// appended when cut), with control characters, invalid UTF-8 and the
// Unicode line and bidi controls escaped, so a server cannot forge log lines
// or drive a terminal.
func safeText(s string, n int) string {
	cut := false
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s, cut = s[:n], true
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteByte(hexDigit[s[i]>>4])
			b.WriteByte(hexDigit[s[i]&0xf])
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069'):
			switch r {
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			default:
				b.WriteString(`\u`)
				for sh := 12; sh >= 0; sh -= 4 {
					b.WriteByte(hexDigit[(r>>sh)&0xf])
				}
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	if cut {
		b.WriteString("…")
	}
	return b.String()
}

const hexDigit = "0123456789abcdef"

// setLogLevel sends opts.LogLevel to a server that declares logging.
func (s *session) setLogLevel(ctx context.Context, logger hclog.Logger, level mcp.LoggingLevel) {
	if level == "" || s.caps().Logging == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if err := s.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		logger.Warn("server refused logging/setLevel; its log level is its own", "level", level, "error", err)
		return
	}
	s.logLevel = level
}
