package gateway

//lint:file-ignore SA1019 logging and roots are deprecated as of protocol 2026-07-28 (SEP-2577), but the fast path must treat them as the go-sdk does

// The stdio fast path for tools/call (issue 26, item 1; RATIONALE "Why does
// the gateway answer tools/call on stdio without the go-sdk?").
//
// On stdio (ServeTransport of an *mcp.IOTransport or *mcp.StdioTransport:
// `toolhost serve --stdio`) the gateway reads the client's lines itself. A
// line that is one complete tools/call request the go-sdk server would
// dispatch to a tool handler (fastParse says which) is decoded here, run
// through the same receiving middlewares (fastChain: max_concurrent,
// callComing, trackLevels) and the same tool handler
// (profileServer.callTool, with the session's *mcp.ServerSession, so
// progress and log relays, elicitation, sampling and roots work as on the
// go-sdk path), and its response is encoded and written here. Every other
// line goes, byte for byte and in order, to a go-sdk connection
// (mcp.IOTransport on a pipe), which does what it always did: initialize,
// listings, batches, responses to the gateway's own requests, malformed
// input and its errors. Both paths write through one lock, one message per
// write.
//
// The go-sdk would decode a tools/call with a 32 KiB buffer per message and
// per nested value, hand it from its read loop to a handler goroutine, and
// encode the result through several layers; here it is one encoding/json
// decode into small maps and one encode, and the call runs on the
// goroutine that read its line (which hands the reading on to a new one,
// readFrom): no goroutine hand-off between the client's line and the
// upstream call.
//
// The boundary: a request takes the fast path only when the go-sdk's
// answer would come from the tool handler (or from a middleware in front
// of it). A request before the session is initialized, with a logLevel in
// its _meta (the go-sdk keeps a per-request level in its context), with a
// protocol version in its _meta that differs in kind from the session's
// (2026-07-28 or later against earlier), with an unsupported version,
// malformed per-request capabilities or client info, with params other
// than name, arguments and _meta, with arguments that are not an object,
// with an id that is not a string or an integer within ±2^53 (the go-sdk
// reads number ids as float64), with the same id as a fast
// call still in flight, or not exactly `{...}` followed by a newline, goes
// to the go-sdk. Once a line forwarded to the go-sdk is not a complete JSON
// value on its own (a message spread over lines), or a line is longer than
// the line limit, everything after it goes to the go-sdk too: the go-sdk's
// decoder reads a stream, and only whole-line values can be taken out of
// it without changing what it sees.
//
// TOOLHOST_GATEWAY_FASTPATH=off in the environment turns the fast path off
// (everything through the go-sdk, as before): for comparisons
// (BenchmarkGatewayCall's gateway-stdio-sdk) and as an escape hatch.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/gopool"
	"github.com/toolhost/toolhost/internal/handoff"
	"github.com/toolhost/toolhost/internal/jsonx"
	"github.com/toolhost/toolhost/internal/mcpwire"
)

// FastPathEnv is the environment variable that turns the stdio fast path
// off when it is "off".
const FastPathEnv = "TOOLHOST_GATEWAY_FASTPATH"

// protocol2026_07_28 is the first MCP version of per-request metadata
// (SEP-2575) and multi-round results (SEP-2322).
const protocol2026_07_28 = "2026-07-28"

// fastTransport is the stdio transport of the fast path: an mcp.Transport
// whose connection is the go-sdk's own (IOTransport over a pipe) for what
// the go-sdk handles, with the client's lines read by readLoop.
type fastTransport struct {
	g      *Gateway
	r      io.ReadCloser // the client's messages (stdin)
	w      io.Writer     // to the client (stdout)
	closeW func() error  // closes w when the transport owns it, else nil
	max    int           // the longest line taken apart here, in bytes

	// bound is set by bind, which then closes bindc; readLoop reads its
	// first line only after that, so every reader of bound (the reading
	// and the calls it starts) sees it set, and no call goes to the go-sdk
	// only because it came before the session was bound (the go-sdk's
	// Connect reads nothing itself).
	bound *fastBound
	bindc chan struct{}

	wmu sync.Mutex // one message per write, fast path and go-sdk alike

	pr *io.PipeReader // the go-sdk's side of what readLoop forwards
	pw *io.PipeWriter

	ctx    context.Context // the calls' parent; cancelled by close
	cancel context.CancelFunc

	mu     sync.Mutex
	live   map[string]context.CancelFunc // fast calls in flight, by fastCall.key
	closed bool
	calls  sync.WaitGroup

	memo metaMemo // the last _meta of a call (parseCall)

	// watch gives the reading held by a fast call that waits elsewhere
	// than on its backend (readFrom); set by Connect, stopped by close.
	watch *handoff.Watch

	// pool runs the reading handed on by a call (readFrom) and the calls
	// multiRound detaches, on goroutines whose stacks have grown to a
	// call's depth already (internal/gopool); closed by close.
	pool *gopool.Pool

	closeOnce sync.Once
}

// fastBound is what a fast call needs of its session: the profile server
// it was connected to, the go-sdk session, and the middleware chain.
type fastBound struct {
	ps *profileServer
	ss *mcp.ServerSession
	mh mcp.MethodHandler
}

// fastTransport returns the fast-path transport for t when t is a stdio
// transport (and the fast path is not turned off), else t and nil.
func (g *Gateway) fastTransport(ctx context.Context, t mcp.Transport) (mcp.Transport, *fastTransport) {
	if os.Getenv(FastPathEnv) == "off" {
		return t, nil
	}
	ft := &fastTransport{g: g, live: map[string]context.CancelFunc{}}
	switch tt := t.(type) {
	case *mcp.IOTransport:
		if tt.Reader == nil || tt.Writer == nil {
			return t, nil
		}
		ft.r, ft.w, ft.closeW, ft.max = tt.Reader, tt.Writer, tt.Writer.Close, tt.MaxLineLength
	case *mcp.StdioTransport:
		// As the go-sdk's: stdin is closed with the connection, stdout
		// is not.
		ft.r, ft.w, ft.max = os.Stdin, os.Stdout, tt.MaxLineLength
	default:
		return t, nil
	}
	if ft.max <= 0 {
		ft.max = mcp.DefaultMaxLineLength
	}
	ft.bindc = make(chan struct{})
	ft.pool = gopool.New(fastIdleWorkers)
	ft.ctx, ft.cancel = context.WithCancel(context.WithValue(context.WithoutCancel(ctx), poolKey{}, ft.pool))
	ft.pr, ft.pw = io.Pipe()
	return &fastWrapped{ft: ft, limit: t}, ft
}

// fastWrapped is the mcp.Transport handed to the go-sdk.
type fastWrapped struct {
	ft    *fastTransport
	limit mcp.Transport // the original, for its MaxLineLength
}

func (t *fastWrapped) Connect(ctx context.Context) (mcp.Connection, error) {
	ft := t.ft
	max := 0
	switch tt := t.limit.(type) {
	case *mcp.IOTransport:
		max = tt.MaxLineLength
	case *mcp.StdioTransport:
		max = tt.MaxLineLength
	}
	inner, err := (&mcp.IOTransport{Reader: ft.pr, Writer: fastWriter{ft}, MaxLineLength: max}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	ft.watch = handoff.NewWatch(readHandoffDelay) // stopped by close, as fastConn's Close calls it
	go ft.readLoop()
	return &fastConn{Connection: inner, ft: ft}, nil
}

// fastConn is the go-sdk's connection; closing it ends the fast path too.
type fastConn struct {
	mcp.Connection
	ft *fastTransport
}

func (c *fastConn) Close() error {
	err := c.Connection.Close()
	c.ft.close()
	return err
}

// fastWriter is the go-sdk connection's writer: the client's, under the
// write lock. The go-sdk writes one whole message per Write. Close is the
// transport's (fastTransport.close).
type fastWriter struct{ ft *fastTransport }

func (w fastWriter) Write(p []byte) (int, error) { return w.ft.write(p) }
func (w fastWriter) Close() error                { return nil }

func (ft *fastTransport) write(p []byte) (int, error) {
	ft.wmu.Lock()
	defer ft.wmu.Unlock()
	return ft.w.Write(p)
}

// bind makes the fast path available on session ss of ps (nil-safe).
func (ft *fastTransport) bind(ps *profileServer, ss *mcp.ServerSession) {
	if ft == nil {
		return
	}
	ft.bound = &fastBound{ps: ps, ss: ss, mh: ft.g.fastChain(ps)}
	close(ft.bindc)
}

// close cancels the fast calls in flight and waits for them, and closes the
// client's streams (unblocking readLoop, which is not waited for: as with
// the go-sdk's stdio, a read of a terminal may not return on Close).
func (ft *fastTransport) close() {
	ft.closeOnce.Do(func() {
		ft.mu.Lock()
		ft.closed = true
		ft.mu.Unlock()
		ft.cancel()
		_ = ft.r.Close()
		_ = ft.pw.CloseWithError(io.ErrClosedPipe)
		if ft.closeW != nil {
			_ = ft.closeW()
		}
		ft.calls.Wait()
		if ft.watch != nil {
			ft.watch.Stop()
		}
		ft.pool.Close()
	})
}

// fastIdleWorkers is how many goroutines a stdio session keeps parked for
// reuse (gopool.New): one reads while another serves a call, and one more
// may run a call multiRound detached, with room for a few concurrent calls.
const fastIdleWorkers = 4

type poolKey struct{}

// goIn runs f on the goroutine pool of ctx's stdio session, if any, else
// on pool (nil: a new goroutine).
func goIn(ctx context.Context, pool *gopool.Pool, f func()) {
	if p, _ := ctx.Value(poolKey{}).(*gopool.Pool); p != nil {
		pool = p
	}
	if pool == nil {
		go f()
		return
	}
	pool.Go(f)
}

// readHandoffDelay is how long a fast call may hold its connection's
// reading without giving it (readFrom): a client's next line waits at most
// about twice this long (handoff.Watch) for a call that waits elsewhere
// than on its backend's answer (a Wasm plugin's work, a backend coming up,
// a max_concurrent slot).
const readHandoffDelay = time.Millisecond

// readLoop reads the client's lines: a fast tools/call is served here,
// everything else goes to the go-sdk unchanged.
func (ft *fastTransport) readLoop() {
	select {
	case <-ft.bindc:
	case <-ft.ctx.Done(): // closed unbound: the go-sdk's Connect failed
		return
	}
	ft.readFrom(bufio.NewReaderSize(ft.r, 64<<10), nil)
}

// readFrom is readLoop from br on (long: its buffer for overlong lines).
//
// A fast call runs on the goroutine that read it: the call goes on on the
// thread that woke up for its line, with no hand-off on its way. The
// reading (br and long) goes to another goroutine when the call waits
// (internal/handoff: the stdio transport gives it once the call's request
// is written to the backend, and the connection's watch gives it once a
// call has held it for readHandoffDelay), so the next lines (a
// notifications/cancelled for it, a ping, the answer to an elicitation it
// relays, another call) are read while it waits; a call that ends first
// (an in-process plugin's, a refusal) leaves the reading here. The call's fastCall holds no byte of
// br's buffer (fastParse copies).
func (ft *fastTransport) readFrom(br *bufio.Reader, long []byte) {
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it, up to max.
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) <= ft.max {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
			if cap(long) > 1<<20 {
				long = nil // not kept for the connection's life
			}
		}
		if len(line) > ft.max {
			// Beyond the line limit: the go-sdk has the rest of the
			// stream (and refuses the frame).
			ft.forwardRest(line, br)
			return
		}
		if len(line) > 0 {
			if fc := ft.fastParse(line); fc != nil {
				if ctx, ok := ft.start(fc); ok {
					d := ft.watch.Hold(func() { ft.pool.Go(func() { ft.readFrom(br, long) }) })
					ft.serve(handoff.With(ctx, d), fc)
					if !d.Keep() {
						return // another goroutine reads on
					}
					continue
				}
			}
			ft.noteCancel(line)
			if _, werr := ft.pw.Write(line); werr != nil {
				return
			}
			if !wholeValue(line) {
				ft.forwardRest(nil, br)
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			_ = ft.pw.CloseWithError(err)
			return
		}
	}
}

// forwardRest gives the go-sdk head and the rest of the stream.
func (ft *fastTransport) forwardRest(head []byte, br *bufio.Reader) {
	if len(head) > 0 {
		if _, err := ft.pw.Write(head); err != nil {
			return
		}
	}
	_, err := io.Copy(ft.pw, br)
	_ = ft.pw.CloseWithError(err)
}

// wholeValue reports whether line (with its newline) is blank or one JSON
// value: the go-sdk's decoder is then between messages after it.
func wholeValue(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) == 0 || json.Valid(t)
}

// fastCall is one tools/call taken by the fast path.
type fastCall struct {
	key   string // "s"+string id or "n"+integer id: the in-flight map's key
	id    []byte // the id as written back
	name  string
	args  json.RawMessage
	meta  mcp.Meta
	newer bool // the request names protocol 2026-07-28 or later (SEP-2575)
	// plainID: id is the id exactly as sent (a string of printable ASCII
	// with no escape, or an integer written plainly), which the guard's
	// checkID always accepts.
	plainID bool
}

// maxExactID is the largest integer id a float64 holds exactly (2^53).
const maxExactID = 1 << 53

var (
	toolsCallMethod = []byte(`"tools/call"`)
	rpcVersion      = []byte(`"2.0"`)
)

// fastParse returns the tools/call of line when the fast path may serve it
// (see the top of this file), else nil.
func (ft *fastTransport) fastParse(line []byte) *fastCall {
	b := ft.bound
	if !bytes.Contains(line, toolsCallMethod) {
		return nil
	}
	fc := parseCall(line, &ft.memo)
	if fc == nil {
		return nil
	}
	if !b.ps.fastHas(fc.name) {
		// Not a catalogue tool sync registered with ps.callTool: a
		// meta-tool (search_tools, call_tool, run_code) with a handler
		// of its own, a tool search mode does not list, one of a
		// backend still coming up, or an unknown name. The go-sdk's
		// server and its middlewares (callHidden, callComing) have it.
		return nil
	}
	ip := b.ss.InitializeParams()
	if ip == nil || (ip.ProtocolVersion >= protocol2026_07_28) != fc.newer {
		return nil
	}
	return fc
}

// parseCall reads line, one JSON-RPC request on one line, in one pass: a
// tools/call whose members are exactly jsonrpc "2.0", an id (a string, or
// an integer within ±2^53), method and params, and whose params has a
// string name and nothing but name, an object of arguments and _meta. It
// returns nil for anything else, and for what it could read but does not
// take (a member named twice, a key with an escape, a line that does not
// start with '{' and end with "}\n"): those go to the go-sdk, which
// decides. The fastCall holds no byte of line. (One pass: the line was
// decoded three times over, as maps of raw members at each level, a
// ninth of the gateway child's CPU; FuzzParseCall holds it to that
// decoding, parseCallMaps in fast_internal_test.go.)
//
// memo, when not nil, is the connection's: a _meta the same as the last
// one's is not decoded again (see metaMemo).
func parseCall(line []byte, memo *metaMemo) *fastCall {
	obj, ok := bytes.CutSuffix(line, []byte("\n"))
	if !ok {
		return nil
	}
	obj = bytes.TrimSuffix(obj, []byte("\r"))
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' {
		return nil
	}
	return parseRequest(obj, memo)
}

// parseRequest is parseCall of obj, the text of one JSON object with
// nothing before or after it.
func parseRequest(obj []byte, memo *metaMemo) *fastCall {
	if !json.Valid(obj) {
		return nil
	}
	var id, params []byte
	seen, ok := members(obj, func(key, v []byte) uint8 {
		switch string(key) {
		case "jsonrpc":
			if bytes.Equal(v, rpcVersion) {
				return 1
			}
		case "id":
			id = v
			return 2
		case "method":
			if bytes.Equal(v, toolsCallMethod) {
				return 4
			}
		case "params":
			params = v
			return 8
		}
		return 0
	})
	if !ok || seen != 15 {
		return nil
	}
	fc := &fastCall{}
	if id[0] == '"' {
		s, ok := jsonString(id)
		if !ok {
			return nil
		}
		fc.key = "s" + s
		if plainASCII(id) {
			fc.id = bytes.Clone(id)
		} else {
			fc.id = marshalID(s)
		}
	} else {
		n, err := strconv.ParseInt(string(id), 10, 64)
		if err != nil || n > maxExactID || n < -maxExactID {
			// The go-sdk decodes a number id as a float64: beyond 2^53
			// it answers with another id. It has those, as before.
			return nil
		}
		fc.key = "n" + strconv.FormatInt(n, 10)
		fc.id = strconv.AppendInt(nil, n, 10)
	}
	fc.plainID = bytes.Equal(fc.id, id)
	if params[0] != '{' {
		return nil
	}
	var name, meta, args []byte
	if _, ok := members(params, func(key, v []byte) uint8 {
		switch string(key) {
		case "name":
			name = v
			return 1
		case "arguments":
			if v[0] == '{' {
				args = v
				return 2
			}
		case "_meta":
			meta = v
			return 4
		}
		return 0
	}); !ok {
		return nil
	}
	if args != nil {
		fc.args = bytes.Clone(args)
	}
	if name == nil || name[0] != '"' {
		return nil
	}
	if fc.name, ok = jsonString(name); !ok {
		return nil
	}
	if meta != nil && !fc.parseMeta(meta, memo) {
		return nil
	}
	return fc
}

// members calls f with the key (escapes kept) and value text of each member
// of obj, a JSON object's text (valid JSON), and returns the bits f gave
// them or'ed together; false when f gives one 0 (not taken) or a bit
// twice (a member named twice), or obj is not an object.
func members(obj []byte, f func(key, value []byte) uint8) (uint8, bool) {
	s := mcpwire.Scanner{B: obj}
	if !s.Lit('{') {
		return 0, false
	}
	var seen uint8
	if s.Lit('}') {
		return 0, true
	}
	for {
		key, v, ok := s.Member()
		if !ok {
			return 0, false
		}
		bit := f(key, v)
		if bit == 0 || seen&bit != 0 {
			return 0, false
		}
		seen |= bit
		if !s.Lit(',') {
			return seen, true
		}
	}
}

// plainASCII reports whether the JSON string s (with its quotes) is
// printable ASCII without a backslash or a character encoding/json escapes
// (<, >, &): its text is then its value, and json.Marshal of its value is s.
func plainASCII(s []byte) bool {
	for _, c := range s[1 : len(s)-1] {
		if c < 0x20 || c >= 0x7f || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// marshalID is the JSON text of the string id s as the go-sdk writes it
// back (jsonrpc2.EncodeMessage, go-sdk v1.8.0: encoding/json without HTML
// escapes).
func marshalID(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// jsonString decodes the JSON string s (with its quotes; valid JSON), as
// encoding/json does: invalid UTF-8 becomes U+FFFD.
func jsonString(s []byte) (string, bool) {
	if plainASCII(s) {
		return string(s[1 : len(s)-1]), true
	}
	var v string
	return v, json.Unmarshal(s, &v) == nil
}

// metaMemo is what parseMeta made of the last _meta a connection's calls
// carried. A client of protocol 2026-07-28 sends the same per-request
// metadata (SEP-2575: protocol version, client info and capabilities) with
// every call, and its three encoding/json decodes were most of parseCall's
// time; a _meta byte for byte the same as the last is not decoded again.
// Safe for concurrent use; the zero value is empty.
type metaMemo struct{ last atomic.Pointer[memoEntry] }

// memoEntry is one _meta's text and parseMeta's outcome for it. meta is
// never handed out: each call gets a copy of its top level (its values,
// the nested maps, are shared, and nothing on the call's path writes to
// them; the layers that add to a request's _meta copy it first).
type memoEntry struct {
	raw       []byte
	meta      mcp.Meta
	newer, ok bool
}

// parseMeta decodes the request's _meta and checks what the go-sdk checks
// of it (validateRequestMeta, go-sdk v1.8.0: the per-request client info
// and capabilities decode into its types); false sends the request to the
// go-sdk. memo may be nil.
func (fc *fastCall) parseMeta(raw []byte, memo *metaMemo) bool {
	if memo != nil {
		if e := memo.last.Load(); e != nil && bytes.Equal(e.raw, raw) {
			if e.ok {
				fc.meta, fc.newer = maps.Clone(e.meta), e.newer
			}
			return e.ok
		}
	}
	ok := fc.decodeMeta(raw)
	if memo != nil {
		e := &memoEntry{raw: bytes.Clone(raw), newer: fc.newer, ok: ok}
		if ok {
			e.meta, fc.meta = fc.meta, maps.Clone(fc.meta)
		}
		memo.last.Store(e)
	}
	return ok
}

// decodeMeta is parseMeta without its memo.
func (fc *fastCall) decodeMeta(raw []byte) bool {
	if raw[0] != '{' || json.Unmarshal(raw, &fc.meta) != nil {
		return false
	}
	if _, ok := fc.meta[mcp.MetaKeyLogLevel]; ok {
		return false
	}
	v, _ := fc.meta[mcp.MetaKeyProtocolVersion].(string)
	if v < protocol2026_07_28 {
		return true
	}
	if !slices.Contains(mcp.SupportedProtocolVersions(), v) {
		return false
	}
	fc.newer = true
	var info, caps []byte
	s := mcpwire.Scanner{B: raw, I: 1}
	for !s.Lit('}') {
		key, v, ok := s.Member()
		if !ok || bytes.IndexByte(key, '\\') >= 0 {
			return false // a key with an escape: the go-sdk's
		}
		switch string(key) {
		case mcp.MetaKeyClientInfo:
			info = v
		case mcp.MetaKeyClientCapabilities:
			caps = v
		}
		s.Lit(',')
	}
	if info != nil {
		var impl *mcp.Implementation
		if json.Unmarshal(info, &impl) != nil {
			return false
		}
	}
	var c *struct {
		mcp.ClientCapabilities
		Roots *mcp.RootCapabilities `json:"roots,omitempty"`
	}
	return caps != nil && json.Unmarshal(caps, &c) == nil && c != nil
}

// start admits fc and returns the context to serve it with (serve then
// ends it); false when it cannot (an id of a fast call in flight, or the
// transport is closing): the go-sdk has it.
func (ft *fastTransport) start(fc *fastCall) (context.Context, bool) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if ft.closed {
		return nil, false
	}
	if _, dup := ft.live[fc.key]; dup {
		return nil, false
	}
	ctx, cancel := context.WithCancel(ft.ctx)
	ft.live[fc.key] = cancel
	ft.calls.Add(1)
	return ctx, true
}

// noteCancel cancels the fast call a notifications/cancelled line names
// (MCP 2025-11-25 basic/utilities/cancellation). The line goes to the
// go-sdk too, for its own calls.
func (ft *fastTransport) noteCancel(line []byte) {
	key, ok := cancelKey(line)
	if !ok {
		return
	}
	ft.mu.Lock()
	cancel := ft.live[key]
	ft.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

var cancelledMethod = []byte(`"notifications/cancelled"`)

// cancelKey returns the fastCall.key of the request a
// notifications/cancelled message names, and false for any other message.
func cancelKey(msg []byte) (string, bool) {
	if !bytes.Contains(msg, cancelledMethod) {
		return "", false
	}
	var n struct {
		Method string `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &n) != nil || n.Method != "notifications/cancelled" {
		return "", false
	}
	switch id := n.Params.RequestID; {
	case len(id) > 0 && id[0] == '"':
		var s string
		if json.Unmarshal(id, &s) != nil {
			return "", false
		}
		return "s" + s, true
	default:
		i, err := strconv.ParseInt(string(id), 10, 64)
		if err != nil {
			return "", false
		}
		return "n" + strconv.FormatInt(i, 10), true
	}
}

// testHookBeforeBind, when set (by a test, before the connection), runs in
// ServeTransport between the go-sdk's Connect and the fast path's bind.
var testHookBeforeBind atomic.Pointer[func()]

// fastServed counts the calls the fast path has served (for tests).
var fastServed atomic.Int64

// serve runs one fast call and writes its response.
func (ft *fastTransport) serve(ctx context.Context, fc *fastCall) {
	defer ft.calls.Done()
	fastServed.Add(1)
	defer func() {
		ft.mu.Lock()
		cancel := ft.live[fc.key]
		delete(ft.live, fc.key)
		ft.mu.Unlock()
		cancel()
	}()
	b := ft.bound
	req := &mcp.CallToolRequest{Session: b.ss, Params: &mcp.CallToolParamsRaw{Meta: fc.meta, Name: fc.name, Arguments: fc.args}}
	res, err := b.mh(ctx, "tools/call", req)
	_, _ = ft.write(append(ft.g.fastResponse(res, err, fc, b.ss, 1), '\n'))
}

// fastResponse is the JSON-RPC response to fc, a call whose handler
// returned r and err, as the go-sdk would write it, with room for extra
// bytes more.
func (g *Gateway) fastResponse(r mcp.Result, err error, fc *fastCall, ss *mcp.ServerSession, extra int) []byte {
	var body []byte
	if err == nil {
		body, err = g.fastResult(r, fc, ss)
	}
	out := make([]byte, 0, len(body)+len(fc.id)+40+extra)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, fc.id...)
	if err != nil {
		werr, _ := json.Marshal(wireError(err))
		out = append(out, `,"error":`...)
		out = append(out, werr...)
	} else {
		out = append(out, `,"result":`...)
		out = append(out, body...)
	}
	return append(out, '}')
}

// fastResult encodes a call's result as the go-sdk's Server.callTool and
// ServerSession.handle would (go-sdk v1.8.0): resultType "complete" or
// "input_required" for a 2026-07-28 session, content [] rather than null,
// the server's identity in _meta for a 2026-07-28 request.
//
// It encodes the result's exported fields only. A result decoded from an
// upstream server of 2026-07-28 carries that server's resultType in an
// unexported field, which json.Marshal writes: the go-sdk overwrites it
// for a 2026-07-28 session and writes it, leaked, to an older one; here a
// 2026-07-28 session gets the gateway's own (once: it was written twice
// before) and an older one none, as the protocol it speaks has no such
// member.
func (g *Gateway) fastResult(r mcp.Result, fc *fastCall, ss *mcp.ServerSession) ([]byte, error) {
	res, _ := r.(*mcp.CallToolResult)
	if res == nil {
		return []byte("null"), nil
	}
	cp := mcp.CallToolResult{Meta: res.Meta, Content: res.Content, StructuredContent: res.StructuredContent,
		IsError: res.IsError, InputRequests: res.InputRequests, RequestState: res.RequestState}
	inputRequired := cp.InputRequests != nil
	if inputRequired && (len(cp.Content) > 0 || cp.StructuredContent != nil) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "server bug: result has both content and inputRequests"}
	}
	newer := false
	if ip := ss.InitializeParams(); ip != nil {
		newer = ip.ProtocolVersion >= protocol2026_07_28
	}
	if inputRequired && !newer {
		// The go-sdk would ask the client itself; the gateway's handler
		// asks only 2026-07-28 clients this way (mrtr.go).
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "server bug: input requests for a client before 2026-07-28"}
	}
	if cp.Content == nil && !inputRequired {
		cp.Content = []mcp.Content{}
	}
	var info []byte // the _meta to write in place of cp's, if any
	if fc.newer {
		if _, ok := cp.Meta[mcp.MetaKeyServerInfo]; !ok {
			if len(cp.Meta) == 0 {
				info = g.serverInfoMeta()
			} else {
				cp.Meta = maps.Clone(cp.Meta)
				cp.Meta[mcp.MetaKeyServerInfo] = g.impl()
			}
		}
	}
	body, ok := appendPlainResult(make([]byte, 0, 128), &cp, info)
	if !ok {
		if info != nil {
			cp.Meta = mcp.Meta{mcp.MetaKeyServerInfo: g.impl()}
		}
		var err error
		if body, err = json.Marshal(&cp); err != nil {
			return nil, fmt.Errorf("marshaling the result: %w", err)
		}
	}
	if newer {
		rt := `,"resultType":"complete"}`
		if inputRequired {
			rt = `,"resultType":"input_required"}`
		}
		body = append(body[:len(body)-1], rt...)
	}
	return body, nil
}

// appendPlainResult appends cp as json.Marshal writes it, with meta (JSON
// text, or nil) as its _meta in place of cp.Meta, when cp has the shape
// almost every tool result has: text content blocks only, none with a
// _meta or annotations, and no _meta of its own (beyond meta), structured
// content, input requests or request state. It reports false, having
// appended nothing, for any other result. (json.Marshal checks and
// compacts what each MarshalJSON of the go-sdk's returns, three times
// over for a text result: a sixth of a fast call's own time.)
// FuzzAppendPlainResult holds it to json.Marshal.
func appendPlainResult(b []byte, cp *mcp.CallToolResult, meta []byte) ([]byte, bool) {
	if len(cp.Meta) != 0 || cp.StructuredContent != nil || cp.InputRequests != nil || cp.RequestState != "" || cp.Content == nil {
		return b, false
	}
	for _, c := range cp.Content {
		if t, ok := c.(*mcp.TextContent); !ok || t == nil || len(t.Meta) != 0 || t.Annotations != nil {
			return b, false
		}
	}
	b = append(b, '{')
	if meta != nil {
		b = append(b, `"_meta":`...)
		b = append(b, meta...)
		b = append(b, ',')
	}
	b = append(b, `"content":[`...)
	for i, c := range cp.Content {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"text","text":`...)
		b = jsonx.AppendMarshaled(b, c.(*mcp.TextContent).Text)
		b = append(b, '}')
	}
	b = append(b, ']')
	if cp.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}'), true
}

// serverInfoMeta is the JSON text of the _meta a 2026-07-28 request's
// result gets: the gateway's identity (g.impl) under
// io.modelcontextprotocol/serverInfo, as json.Marshal writes it.
func (g *Gateway) serverInfoMeta() []byte {
	g.infoOnce.Do(func() {
		g.infoMeta, _ = json.Marshal(mcp.Meta{mcp.MetaKeyServerInfo: g.impl()})
	})
	return g.infoMeta
}

// wireError is the JSON-RPC error object of err, as the go-sdk's jsonrpc2
// makes it (toWireError): a *jsonrpc.Error as it is, else err's message
// with the code of a wrapped *jsonrpc.Error (0 if none).
func wireError(err error) *jsonrpc.Error {
	if we, ok := err.(*jsonrpc.Error); ok {
		return we
	}
	out := &jsonrpc.Error{Message: err.Error()}
	var wrapped *jsonrpc.Error
	if errors.As(err, &wrapped) {
		out.Code = wrapped.Code
	}
	return out
}

// impl is the gateway's identity, as newServer gives it to every profile's
// go-sdk server.
func (g *Gateway) impl() *mcp.Implementation {
	return &mcp.Implementation{Name: "toolhost", Title: "toolhost gateway", Version: g.opts.Version}
}

// fastChain is newServer's receiving middleware (ps.receiving, the last
// outermost) around the tool handler: innermost what the go-sdk's
// Server.callTool does, with the profile's registered tools.
func (g *Gateway) fastChain(ps *profileServer) mcp.MethodHandler {
	var h mcp.MethodHandler = func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r := req.(*mcp.CallToolRequest)
		if !ps.fastHas(r.Params.Name) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", r.Params.Name)}
		}
		res, err := ps.callTool(r.Params.Name)(ctx, r)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	for _, mw := range ps.receiving {
		h = mw(h)
	}
	return h
}

// fastHas reports whether the profile's server has tool name registered.
func (ps *profileServer) fastHas(name string) bool {
	m := ps.fastTools.Load()
	return m != nil && (*m)[name]
}

// fastPublish records the tools registered now (sync calls it with ps.mu
// held, after registering them).
func (ps *profileServer) fastPublish() {
	m := make(map[string]bool, len(ps.tools))
	for k := range ps.tools {
		m[k] = true
	}
	ps.fastTools.Store(&m)
}
