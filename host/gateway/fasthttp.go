package gateway

//lint:file-ignore SA1019 sampling and roots are deprecated as of protocol 2026-07-28 (SEP-2577) but clients and servers still use them

// The Streamable HTTP fast path for tools/call (issue 26, item 1; RATIONALE
// "Why does the gateway answer tools/call on stdio without the go-sdk?",
// which covers both).
//
// A POST to /mcp in a session the gateway knows (the guard learnt it at
// its initialize, guard.go) whose body is one tools/call the go-sdk
// server would hand to a tool handler is served here, on the goroutine of
// the HTTP request: decoded by parseRequest (the stdio fast path's), run
// through the profile server's receiving middlewares and tool handler
// (fastChain, with the session's *mcp.ServerSession and a RequestExtra
// carrying the token and the headers as the go-sdk's would), and its
// response written as the one event of a text/event-stream response, as
// the go-sdk writes it without an event store (go-sdk v1.8.0
// streamableServerConn.servePOST and writeEvent). The go-sdk would pass
// the request from the HTTP goroutine to the session's read loop, from
// there to a handler goroutine, and the response back to the HTTP
// goroutine through the stream; it decodes the body twice over with
// 32 KiB buffers.
//
// The boundary: the fast path serves only what the go-sdk would answer
// alike and from which nothing but the response goes to the client. It
// takes a request when:
//   - the session is stateful, known to the guard, opened by the same
//     client (token), and negotiated a version before 2026-07-28;
//   - the request's MCP-Protocol-Version header names that version, its
//     Content-Type is application/json, its Accept admits both
//     application/json and text/event-stream, and it has no Last-Event-ID
//     and no Mcp-Method, Mcp-Name or Mcp-Param-* header (the go-sdk
//     checks those against the body);
//   - the body is one tools/call parseRequest takes (no logLevel in its
//     _meta, params of name, arguments and _meta only...), of a tool the
//     profile server registered (fastHas). The backend's progress reports
//     (under the client's progressToken) and log messages (at or above
//     the level the session set, as the go-sdk's ServerSession.Log
//     filters them) go on the call's stream (fastStream.notify, from the
//     relay), encoded as the go-sdk's;
//   - the session's client declared neither elicitation nor sampling: a
//     backend's elicitation/create or sampling/createMessage during the
//     call would go to the client on the call's stream, with the checks
//     the go-sdk's ServerSession.Elicit and CreateMessage make, and only
//     the go-sdk's server has those. A backend's roots/list during the
//     call goes to a client that declared roots on the call's stream
//     (fastStream.ask, from Roots): an SSE event carrying the request,
//     with an id "toolhost-<n>" that no go-sdk request id equals; the
//     client's answer, POSTed in the session, is taken here (202
//     Accepted), and a request the call no longer waits for is cancelled
//     (notifications/cancelled on the stream), as the go-sdk does.
//
// Everything else goes to the go-sdk as before. A notifications/cancelled
// that names a fast call in flight cancels it (202 Accepted); one that
// does not goes to the go-sdk. A fast call whose id is that of another
// fast call in flight in the session is refused as the go-sdk refuses a
// duplicate (HTTP 400, -32600). (The go-sdk and the fast path do not see
// each other's ids in flight: a client that reuses an id of a call the
// go-sdk has gets both answered.)
//
// TOOLHOST_GATEWAY_FASTPATH=off turns this fast path off too.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fastHTTPServed counts the calls the HTTP fast path has served (tests).
var fastHTTPServed atomic.Int64

// fastHTTP serves the POSTs the fast path takes and hands every other
// request to next (the go-sdk's handler).
func (g *Gateway) fastHTTP(next http.Handler) http.Handler {
	if os.Getenv(FastPathEnv) == "off" || g.serve.Stateless {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if pb, ok := r.Body.(*postBody); ok {
				if sid := r.Header.Get("Mcp-Session-Id"); sid != "" && g.fastPOST(w, r, sid, bytes.TrimSpace(pb.b), pb.fc) {
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// fastPOST serves r, a POST to session sid with body body, when the fast
// path takes it (see the top of this file), and reports whether it did;
// fc is parseRequest's reading of body, when the guard made it.
func (g *Gateway) fastPOST(w http.ResponseWriter, r *http.Request, sid string, body []byte, fc *fastCall) bool {
	if len(body) < 2 || body[0] != '{' || body[len(body)-1] != '}' || !fastHeaders(r) {
		return false
	}
	gd := g.guard
	gd.mu.Lock()
	s := gd.sessions[sid]
	gd.mu.Unlock()
	if s == nil || s.ps == nil || s.version >= protocol2026_07_28 || !s.owns(r) ||
		r.Header.Get("Mcp-Protocol-Version") != s.version {
		return false
	}
	if key, ok := cancelKey(body); ok {
		gd.mu.Lock()
		cancel := s.live[key]
		gd.mu.Unlock()
		if cancel == nil {
			return false
		}
		cancel()
		w.WriteHeader(http.StatusAccepted)
		return true
	}
	if id, reply, ok := askReply(body); ok {
		gd.mu.Lock()
		ch := s.asks[id]
		delete(s.asks, id)
		gd.mu.Unlock()
		if ch == nil {
			return false
		}
		ch <- reply
		w.WriteHeader(http.StatusAccepted)
		return true
	}
	if !bytes.Contains(body, toolsCallMethod) {
		return false
	}
	ip := s.ss.InitializeParams()
	if ip == nil || (ip.Capabilities != nil && (ip.Capabilities.Elicitation != nil || ip.Capabilities.Sampling != nil)) {
		return false
	}
	if fc == nil {
		fc = parseRequest(body, nil)
	}
	if fc == nil || fc.newer || !s.ps.fastHas(fc.name) {
		return false
	}
	req := &mcp.CallToolRequest{
		Session: s.ss,
		Params:  &mcp.CallToolParamsRaw{Meta: fc.meta, Name: fc.name, Arguments: fc.args},
		Extra:   &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header},
	}
	st := &fastStream{gd: gd, s: s, w: w}
	ctx, cancel := context.WithCancel(context.WithValue(r.Context(), fastStreamKey{}, st))
	defer cancel()
	gd.mu.Lock()
	if gd.sessions[sid] != s {
		gd.mu.Unlock()
		return false // it has ended meanwhile: the go-sdk answers 404
	}
	if _, dup := s.live[fc.key]; dup {
		gd.mu.Unlock()
		writeRPCError(w, http.StatusBadRequest, fc.id, jsonrpc.CodeInvalidRequest, fmt.Sprintf("duplicate in-flight request ID %s", fc.id))
		return true
	}
	s.live[fc.key] = cancel
	if s.mh == nil {
		s.mh = g.fastChain(s.ps)
	}
	mh := s.mh
	gd.mu.Unlock()
	defer func() {
		gd.mu.Lock()
		delete(s.live, fc.key)
		gd.mu.Unlock()
	}()
	fastHTTPServed.Add(1)
	res, err := mh(ctx, "tools/call", req)
	_ = st.send(g.fastResponse(res, err, fc, s.ss, 0), true)
	return true
}

// fastStream is the response stream of a fast call over HTTP: the
// requests Roots sends the client during the call, then the call's
// response.
type fastStream struct {
	gd *guard
	s  *guardSession
	w  http.ResponseWriter

	mu      sync.Mutex
	wrote   bool            // an event went out (and was flushed)
	done    bool            // the response went out: nothing more may
	pending map[string]bool // ids of requests sent on it and not answered or cancelled
}

type fastStreamKey struct{}

// fastStreamIn returns the fast call's stream ctx belongs to, or nil.
func fastStreamIn(ctx context.Context) *fastStream {
	st, _ := ctx.Value(fastStreamKey{}).(*fastStream)
	return st
}

// errStreamDone: the call has been answered; its stream carries no more.
var errStreamDone = errors.New("gateway: the call's response stream has ended")

// send writes msg, a JSON-RPC message, as an event of the stream; last is
// the call's response. The go-sdk flushes each event; the response alone
// on its stream is not flushed: the handler ends at once, and net/http
// then sends it in one write with a Content-Length, where a flushed,
// chunked stream would need a second write for its end, which the client
// waits for.
//
// Before the response, each request sent on the stream that the client
// has not answered is cancelled (notifications/cancelled): the call no
// longer waits for it, and its waiter may not have seen that yet.
func (st *fastStream) send(msg []byte, last bool) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if last {
		for id := range st.pending {
			if err := st.write(cancelledMsg(id, "the call it was sent for has ended"), false); err != nil {
				return err
			}
		}
		clear(st.pending)
	}
	return st.write(msg, last)
}

// cancelledMsg is notifications/cancelled for the request id (MCP
// 2025-11-25 basic/utilities/cancellation).
func cancelledMsg(id, reason string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
		"params": map[string]any{"requestId": id, "reason": reason}})
	return b
}

// write is send with st.mu held, without the cancellations.
func (st *fastStream) write(msg []byte, last bool) error {
	if st.done {
		return errStreamDone
	}
	if !st.wrote {
		h := st.w.Header()
		h.Set("Cache-Control", "no-cache, no-transform")
		h.Set("Content-Type", "text/event-stream")
		h.Set("Connection", "keep-alive")
	}
	ev := make([]byte, 0, len(ssePrefix)+len(msg)+len(sseTail))
	ev = append(append(append(ev, ssePrefix...), msg...), sseTail...)
	if _, err := st.w.Write(ev); err != nil {
		st.done = true
		return err
	}
	st.wrote = true
	if last {
		st.done = true
		return nil
	}
	return http.NewResponseController(st.w).Flush()
}

// notify sends the client a notification (method, params) on the
// stream, encoded as the go-sdk encodes its own (jsonrpc2.EncodeMessage:
// encoding/json without HTML escapes).
func (st *fastStream) notify(method string, params any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params}); err != nil {
		return err
	}
	return st.send(bytes.TrimSuffix(b.Bytes(), []byte("\n")), false)
}

// askSeq numbers the fast path's requests to clients (their ids).
var askSeq atomic.Uint64

// askReplyMsg is a client's answer to a request of the fast path.
type askReplyMsg struct {
	result json.RawMessage
	err    *jsonrpc.Error
}

// ask sends the client a request (method, params) on the stream and
// returns the result it answers, or its error (a *jsonrpc.Error), or
// ctx's when ctx ends first (the client is then sent
// notifications/cancelled for it).
func (st *fastStream) ask(ctx context.Context, method string, params any) (json.RawMessage, error) {
	gd := st.gd
	id := fmt.Sprintf("toolhost-%d", askSeq.Add(1))
	msg, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      string `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", id, method, params})
	if err != nil {
		return nil, err
	}
	ch := make(chan askReplyMsg, 1)
	gd.mu.Lock()
	if st.s.asks == nil {
		st.s.asks = map[string]chan askReplyMsg{}
	}
	st.s.asks[id] = ch
	gd.mu.Unlock()
	defer func() {
		gd.mu.Lock()
		delete(st.s.asks, id)
		gd.mu.Unlock()
	}()
	st.mu.Lock()
	err = st.write(msg, false)
	if err == nil {
		if st.pending == nil {
			st.pending = map[string]bool{}
		}
		st.pending[id] = true
	}
	st.mu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		st.mu.Lock()
		delete(st.pending, id)
		st.mu.Unlock()
		if r.err != nil {
			return nil, r.err
		}
		return r.result, nil
	case <-ctx.Done():
		st.mu.Lock()
		if st.pending[id] {
			delete(st.pending, id)
			_ = st.write(cancelledMsg(id, context.Cause(ctx).Error()), false)
		}
		st.mu.Unlock()
		return nil, ctx.Err()
	}
}

var askPrefix = []byte(`"toolhost-`)

// askReply returns the id and the answer of body when it is a JSON-RPC
// response to a request of the fast path (a string id "toolhost-..."),
// else false.
func askReply(body []byte) (string, askReplyMsg, bool) {
	if !bytes.Contains(body, askPrefix) {
		return "", askReplyMsg{}, false
	}
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   *jsonrpc.Error  `json:"error"`
	}
	if json.Unmarshal(body, &m) != nil || m.JSONRPC != "2.0" || m.Method != nil || len(m.ID) == 0 || m.ID[0] != '"' ||
		(m.Result == nil) == (m.Error == nil) {
		return "", askReplyMsg{}, false
	}
	var id string
	if json.Unmarshal(m.ID, &id) != nil || !strings.HasPrefix(id, "toolhost-") {
		return "", askReplyMsg{}, false
	}
	return id, askReplyMsg{result: m.Result, err: m.Error}, true
}

// The one event of a fast call's response stream (go-sdk v1.8.0
// writeEvent, an Event named "message" with no id).
const (
	ssePrefix = "event: message\ndata: "
	sseTail   = "\n\n"
)

// fastHeaders reports whether r's headers are those of a POST the fast
// path may take: what the go-sdk would accept alike (see the top of this
// file); anything else is its to answer.
func fastHeaders(r *http.Request) bool {
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
		return false
	}
	jsonOK, streamOK := false, false
	for _, v := range r.Header.Values("Accept") {
		for _, t := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(t, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json":
				jsonOK = true
			case "text/event-stream":
				streamOK = true
			}
		}
	}
	// (What else the go-sdk refuses before it looks at the session,
	// sdkRefuses, cannot reach here: front refused a foreign Host on a
	// loopback listener, and fastPOST takes only the version the
	// session negotiated.)
	if !jsonOK || !streamOK {
		return false
	}
	for k := range r.Header {
		if k == "Last-Event-Id" || k == "Mcp-Method" || k == "Mcp-Name" || strings.HasPrefix(k, "Mcp-Param-") {
			return false
		}
	}
	return true
}
