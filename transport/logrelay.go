package transport

//lint:file-ignore SA1019 logging is deprecated as of protocol 2026-07-28 (SEP-2577) but servers still use it

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolClassic is the protocol version an MCP transport offers a server
// when ClientOptions.ProtocolVersion asks for it: the last revision in which
// a server may send elicitation/create, sampling/createMessage and
// roots/list during a call as requests of its own (MCP 2025-11-25). From
// 2026-07-28 such requests come back in the call's result instead (SEP-2322,
// "input required"), and a go-sdk v1.8 server refuses to send them the
// older way on a session of that protocol; a go-sdk server written for
// SEP-2322 still reaches a 2025-11-25 client (the go-sdk sends the requests
// for it), so this version works with servers of both kinds.
const ProtocolClassic = "2025-11-25"

// sessionOptions returns the go-sdk session options for copts (nil: the
// go-sdk's latest protocol).
func sessionOptions(copts *ClientOptions) *mcp.ClientSessionOptions {
	if copts == nil || copts.ProtocolVersion == "" {
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: copts.ProtocolVersion}
}

type logKey struct{}

type logSink struct {
	level mcp.LoggingLevel
	f     func(*mcp.LoggingMessageParams)
}

// WithLog returns a context that asks for the server's log messages
// (notifications/message, MCP 2025-11-25 server/utilities/logging) of the
// tools/call made with it, at level and above (RFC 5424 severities: debug
// is the lowest, emergency the highest). f is called for each, while the
// call is in flight; it runs on the connection's goroutine, so it must be
// quick and must not block. The messages also go to the transport's logger
// as before.
//
// How a message is tied to its call: on a session of protocol 2026-07-28 or
// later the call carries the level in _meta (io.modelcontextprotocol/logLevel,
// SEP-2575) and the server sends that call's messages; on an earlier session
// the server's level is session-wide, so the transport lowers it (sends
// logging/setLevel) when a call asks for a lower level than the session
// has, and never raises it again. In both eras MCP gives a notification no
// link to a request over stdio, so a message reaches f only while this call
// is the only tools/call in flight on the transport; otherwise it goes to
// the logger only. A server without the logging capability sends nothing.
func WithLog(ctx context.Context, level mcp.LoggingLevel, f func(*mcp.LoggingMessageParams)) context.Context {
	if f == nil || level == "" {
		return ctx
	}
	return context.WithValue(ctx, logKey{}, &logSink{level: level, f: f})
}

func logFrom(ctx context.Context) *logSink {
	s, _ := ctx.Value(logKey{}).(*logSink)
	return s
}

// logRank orders MCP log levels; an unknown level ranks as debug.
func logRank(l mcp.LoggingLevel) int {
	switch l {
	case "info":
		return 1
	case "notice":
		return 2
	case "warning":
		return 3
	case "error":
		return 4
	case "critical":
		return 5
	case "alert":
		return 6
	case "emergency":
		return 7
	}
	return 0
}

// handlerLog is relayLog for the go-sdk's notifications/message handler:
// on transports that do not tap their input. There, the go-sdk may hand a
// call its result before it has run the handler for a message that came
// before the result, so the call's last messages can be lost; stdio and
// Streamable HTTP both tap (tapLog, sseTap).
func (c *callSet) handlerLog(p *mcp.LoggingMessageParams) {
	if c != nil && !c.tapped {
		c.relayLog(p)
	}
}

// tapLine relays the notifications/message and notifications/progress of
// one line (stdio) or SSE event (Streamable HTTP) as the transport reads
// it (tapLog, tapProgress).
func tapLine(calls *callSet, progress *progressRouter, line []byte) {
	calls.tapLog(line)
	tapProgress(progress, line)
}

// tapProgress delivers a notifications/progress as the transport reads it,
// for the reason tapLog does. It decodes only lines that may be one while
// a call waits for progress.
func tapProgress(r *progressRouter, line []byte) {
	if !bytes.Contains(line, []byte(`"notifications/progress"`)) || !r.waiting() {
		return
	}
	var msg struct {
		ID     json.RawMessage                 `json:"id"`
		Method string                          `json:"method"`
		Params *mcp.ProgressNotificationParams `json:"params"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.ID != nil || msg.Method != "notifications/progress" {
		return
	}
	r.deliver(msg.Params)
}

// tapLog relays a notifications/message as the transport reads the line
// (stdio) or the SSE event (Streamable HTTP, sseTap): before the line or
// event that carries the call's result is read, so every message a server
// sends before its result reaches the call. It decodes only lines that may
// be one while a call wants them.
func (c *callSet) tapLog(line []byte) {
	if c == nil || !bytes.Contains(line, []byte(`"notifications/message"`)) {
		return
	}
	if cc := c.only(); cc == nil || logFrom(cc) == nil {
		return
	}
	var msg struct {
		ID     json.RawMessage           `json:"id"`
		Method string                    `json:"method"`
		Params *mcp.LoggingMessageParams `json:"params"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.ID != nil || msg.Method != "notifications/message" || msg.Params == nil {
		return
	}
	c.relayLog(msg.Params)
}

// relayLog delivers p to the log sink of the only call in flight, when it
// asked for p's level.
func (c *callSet) relayLog(p *mcp.LoggingMessageParams) {
	if c == nil || p == nil {
		return
	}
	cc := c.only()
	if cc == nil {
		return
	}
	if s := logFrom(cc); s != nil && logRank(p.Level) >= logRank(s.level) {
		s.f(p)
	}
}

// forLog prepares a tools/call on se for ctx's log sink, if any: the
// per-request level in _meta from protocol 2026-07-28, or the session's
// level lowered before it.
func (se *session) forLog(ctx context.Context, p *mcp.CallToolParams) *mcp.CallToolParams {
	s := logFrom(ctx)
	if s == nil || se.caps().Logging == nil {
		return p
	}
	if se.init != nil && se.init.ProtocolVersion >= ProtocolNoPing {
		cp := *p
		cp.Meta = maps.Clone(p.Meta)
		if cp.Meta == nil {
			cp.Meta = mcp.Meta{}
		}
		cp.Meta[mcp.MetaKeyLogLevel] = s.level
		return &cp
	}
	se.logMu.Lock()
	defer se.logMu.Unlock()
	if se.logLevel != "" && logRank(s.level) >= logRank(se.logLevel) {
		return p
	}
	if se.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: s.level}) == nil {
		se.logLevel = s.level
	}
	return p
}

// maxTapEvent bounds the data of one SSE event that sseTap gathers to look
// for a notifications/message in it; a longer event passes through
// untapped (its message, if it is one, still reaches the logger).
const maxTapEvent = 1 << 20

// sseTap is the body of a Streamable HTTP response in SSE form
// (text/event-stream, MCP 2025-11-25 basic/transports) as the go-sdk reads
// it: each event's data goes to tap as soon as the blank line that ends
// the event has been read, before the go-sdk sees any later byte of the
// stream, so a log message sent before a call's result is relayed before
// that result can reach the call (the go-sdk's own handler runs
// notifications asynchronously and may run one after the call has
// returned). Events are parsed as the WHATWG HTML "server-sent events"
// section says: lines end with CRLF, LF or CR; "data:" lines, one optional
// space after the colon, are joined with LF.
type sseTap struct {
	io.ReadCloser
	tap  func([]byte)
	line []byte // the current line so far
	data []byte // the current event's data so far
	over bool   // the current line or event exceeds maxTapEvent
	cr   bool   // the last byte was a CR: an LF next ends no line
}

func newSSETap(body io.ReadCloser, tap func([]byte)) *sseTap {
	return &sseTap{ReadCloser: body, tap: tap}
}

func (t *sseTap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	for _, b := range p[:n] {
		if t.cr && b == '\n' {
			t.cr = false
			continue
		}
		t.cr = b == '\r'
		if b != '\n' && b != '\r' {
			if len(t.line) < maxTapEvent {
				t.line = append(t.line, b)
			} else {
				t.over = true
			}
			continue
		}
		t.endLine()
	}
	return n, err
}

// endLine handles one complete line.
func (t *sseTap) endLine() {
	line := t.line
	t.line = t.line[:0]
	switch {
	case len(line) == 0: // the end of an event
		if len(t.data) > 0 && !t.over {
			t.tap(t.data[:len(t.data)-1]) // without the last LF
		}
		t.data, t.over = t.data[:0], false
	case bytes.HasPrefix(line, []byte("data:")):
		v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
		if len(t.data)+len(v)+1 > maxTapEvent {
			t.over = true
			return
		}
		t.data = append(append(t.data, v...), '\n')
	}
}
