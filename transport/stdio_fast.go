package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/handoff"
	"github.com/toolhost/toolhost/internal/mcpwire"
)

// The stdio tools/call hot path (issue 26, item 2; DESIGN decision 1 and
// docs/RATIONALE.md give the boundary). A tools/call is written here, by
// toolhost, with an ID of its own namespace — the string "th-<n>", which
// the go-sdk's integer IDs never equal — on the same pipe and under the
// same write lock as the go-sdk's messages; lineFilter recognises the line
// that answers it before the go-sdk decodes anything and hands it to the
// waiting call as bytes, which mcpwire decodes into the go-sdk's own types.
// Every other message (initialize, lists, notifications, the server's
// requests) flows to and from the go-sdk as before.
//
// The go-sdk keeps the calls this path cannot make as it would:
//   - a tool that runs as a task (tasks.go: the task layer under the go-sdk
//     polls it);
//   - on a session of protocol 2026-07-28 or later: until a request of the
//     go-sdk's has shown the per-request _meta it sends (SEP-2575:
//     protocolVersion, clientInfo, clientCapabilities; copied verbatim
//     from there), and always when the client answers elicitation,
//     sampling or roots, whose requests come back inside the result there
//     (SEP-2322) and are fulfilled by the go-sdk's retry loop.
//
// What the go-sdk's call does, this one does too: notifications/cancelled
// when ctx ends first (the call returns at once), progress and log messages
// relayed as lineFilter reads them (tapLine runs before the answer is
// matched), an answer over MaxLineLength answered with the same
// ErrOutputTooLarge, and a lost session failing the call with the go-sdk's
// error (mcp.ErrConnectionClosed, explained by fault).

// fastPrefix begins the IDs of the calls made here.
const fastPrefix = "th-"

// fastReply is what the reader hands a waiting call: the response line's
// result or error text (a slice of the line, which is not reused), or a
// synthesized error.
type fastReply struct {
	result, error []byte
	err           error
}

// fastCalls is the stdio transport's own tools/call path.
type fastCalls struct {
	w    *lockedWriter // the child's stdin, shared with the go-sdk
	next atomic.Uint64

	mu      sync.Mutex
	idle    sync.Cond // on mu: broadcast when a call stops waiting
	waiting map[uint64]chan fastReply
	closing bool  // drain began: no new call is sent
	dead    error // why the reader stopped; no call waits after it is set
	n       atomic.Int32

	meta sessionMeta
}

// lockedWriter is the child's stdin with one lock for every write: the
// go-sdk writes each message in one Write call, and so does fastCalls.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return l.w.Close() }

// sessionMeta holds the per-request _meta members the go-sdk adds to its
// requests from protocol 2026-07-28 on (SEP-2575), as it wrote them.
type sessionMeta struct {
	mu    sync.Mutex
	ready bool
	vals  map[string]json.RawMessage
}

var sessionMetaKeys = []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities}

// capture keeps the SEP-2575 members of a request the go-sdk writes (once).
func (m *sessionMeta) capture(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() || req.Method == "initialize" || len(req.Params) == 0 {
		return
	}
	m.captureParams(req.Params)
}

// captureBody is capture for the JSON text of a request.
func (m *sessionMeta) captureBody(body []byte) {
	m.mu.Lock()
	ready := m.ready
	m.mu.Unlock()
	if ready {
		return
	}
	var r struct {
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &r) == nil && len(r.Params) > 0 {
		m.captureParams(r.Params)
	}
}

func (m *sessionMeta) captureParams(params json.RawMessage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ready {
		return
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || p.Meta[mcp.MetaKeyProtocolVersion] == nil || p.Meta[mcp.MetaKeyClientCapabilities] == nil {
		return
	}
	m.vals = map[string]json.RawMessage{}
	for _, k := range sessionMetaKeys {
		if v, ok := p.Meta[k]; ok {
			m.vals[k] = v
		}
	}
	m.ready = true
}

// add returns p with the captured members in its _meta (those p has are
// kept, as the go-sdk does), or ok false when none are captured yet.
func (m *sessionMeta) add(p *mcp.CallToolParams) (*mcp.CallToolParams, bool) {
	m.mu.Lock()
	ready, vals := m.ready, m.vals
	m.mu.Unlock()
	if !ready {
		return nil, false
	}
	cp := *p
	cp.Meta = make(mcp.Meta, len(p.Meta)+len(vals))
	maps.Copy(cp.Meta, p.Meta)
	for k, v := range vals {
		if _, ok := cp.Meta[k]; !ok {
			cp.Meta[k] = v
		}
	}
	return &cp, true
}

// fastSession is what a session needs to make its tools/call here.
type fastSession struct {
	calls *fastCalls
	tasks *taskConn // nil without the task layer
	// newProtocol: the session is of protocol 2026-07-28 or later;
	// answersInput: the client answers elicitation, sampling or roots.
	newProtocol, answersInput bool
	sizes                     *sizeTable
}

// callTool makes the tools/call here when it can (ok true), else leaves it
// to the go-sdk (ok false, nothing sent).
func (f *fastSession) callTool(ctx context.Context, p *mcp.CallToolParams) (res *mcp.CallToolResult, ok bool, err error) {
	if f.tasks != nil && f.tasks.ts.active() && f.tasks.ts.forTool(p.Name) {
		return nil, false, nil
	}
	if f.newProtocol {
		if f.answersInput {
			return nil, false, nil
		}
		if p, ok = f.calls.meta.add(p); !ok {
			return nil, false, nil
		}
	}
	res, size, err := f.calls.call(ctx, p)
	if err == nil {
		if sl, ok := ctx.Value(sizeSlotKey{f.sizes}).(*sizeSlot); ok {
			f.sizes.set(sl, size)
		}
	}
	return res, true, err
}

// set records a result's size in sl (a call made by fastCalls).
func (t *sizeTable) set(sl *sizeSlot, size int) {
	t.mu.Lock()
	sl.size, sl.set = size, true
	t.mu.Unlock()
}

// errNeedsInput: a server of protocol 2026-07-28 or later asked for input
// inside a call's result, and the client offers nothing to answer it with.
var errNeedsInput = errors.New("the server asked for input (input_required) and the client answers no elicitation, sampling or roots")

// call sends p as a tools/call and waits for its answer. It returns the
// result and the length of the response's "result" member. Errors are the
// go-sdk's: calling "tools/call": <the *jsonrpc.Error>; ctx's error; a
// write error; mcp.ErrConnectionClosed when the reader has stopped.
func (c *fastCalls) call(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	n := c.next.Add(1)
	id := fastPrefix + strconv.FormatUint(n, 10)
	req, err := mcpwire.EncodeCallRequest(id, p)
	if err != nil {
		return nil, 0, fmt.Errorf("calling %q: %w", "tools/call", err)
	}
	ch := make(chan fastReply, 1)
	c.mu.Lock()
	if c.dead != nil || c.closing {
		dead := c.dead
		if dead == nil {
			dead = fmt.Errorf("%w: calling %q: %w", mcp.ErrConnectionClosed, "tools/call", ErrClosed)
		}
		c.mu.Unlock()
		req.Free()
		return nil, 0, fmt.Errorf("%w (%w)", dead, ErrNotSent)
	}
	if c.waiting == nil {
		c.waiting = map[uint64]chan fastReply{}
	}
	c.waiting[n] = ch
	c.n.Add(1)
	c.mu.Unlock()
	_, err = c.w.Write(req.Bytes())
	req.Free()
	if err != nil {
		c.forget(n)
		return nil, 0, fmt.Errorf("calling %q: %w", "tools/call", err)
	}
	// The call waits for its answer now: the gateway's reading of its
	// client goes on elsewhere meanwhile (internal/handoff).
	handoff.Give(ctx)
	var r fastReply
	select {
	case r = <-ch:
	case <-ctx.Done():
		c.forget(n)
	}
	if ctx.Err() != nil {
		// As the go-sdk's call: a context done by now wins over an answer
		// that came at the same moment, and the server is told.
		c.cancel(id, ctx.Err())
		return nil, 0, ctx.Err()
	}
	return decodeReply(r)
}

func decodeReply(r fastReply) (*mcp.CallToolResult, int, error) {
	switch {
	case r.err != nil:
		return nil, 0, r.err
	case r.error != nil:
		werr, err := mcpwire.DecodeError(r.error)
		if err != nil {
			return nil, 0, fmt.Errorf("calling %q: %w: %v", "tools/call", ErrProtocol, err)
		}
		return nil, 0, fmt.Errorf("calling %q: %w", "tools/call", werr)
	}
	raw := r.result
	if raw == nil {
		raw = []byte("null")
	}
	res, err := mcpwire.DecodeCallToolResult(raw)
	if err != nil {
		return nil, 0, fmt.Errorf("calling %q: %w", "tools/call", err)
	}
	if res.NeedsInput() {
		return nil, 0, fmt.Errorf("calling %q: %w", "tools/call", errNeedsInput)
	}
	return res, len(r.result), nil
}

// forget removes call n; false when it was no longer waiting (its answer
// was handed over, or the reader stopped).
func (c *fastCalls) forget(n uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.waiting[n]; !ok {
		return false
	}
	delete(c.waiting, n)
	c.n.Add(-1)
	c.idleLocked()
	return true
}

// idleLocked wakes drain when no call waits any more (c.mu held).
func (c *fastCalls) idleLocked() {
	if len(c.waiting) == 0 && c.idle.L != nil {
		c.idle.Broadcast()
	}
}

// drain stops new calls and waits until none waits for its answer (each
// ends with its answer, its context, or the reader), as the go-sdk's Close
// waits for its calls in flight before it closes the connection.
func (c *fastCalls) drain() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	if c.idle.L == nil {
		c.idle.L = &c.mu
	}
	for len(c.waiting) > 0 && c.dead == nil {
		c.idle.Wait()
	}
}

// cancel tells the server call id is no longer wanted (MCP 2025-11-25
// basic/utilities/cancellation), best effort.
func (c *fastCalls) cancel(id string, cause error) {
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
		"params": map[string]any{"requestId": id, "reason": cause.Error()}})
	if err == nil {
		_, _ = c.w.Write(append(msg, '\n'))
	}
}

// take hands line to the call it answers, when it answers one made here;
// false: the line is for the go-sdk.
func (c *fastCalls) take(line []byte) bool {
	if c == nil || c.n.Load() == 0 {
		return false
	}
	r, ok := mcpwire.ParseResponse(line)
	if !ok {
		return false
	}
	n, ok := fastID(r.ID)
	if !ok {
		return false
	}
	c.deliver(n, fastReply{result: r.Result, error: r.Error})
	// An answer to a call made here never reaches the go-sdk, which did
	// not make it (a late one, after a cancellation, is dropped).
	return true
}

// fastID reads an ID of ours from its JSON text: "th-<n>", no escapes.
func fastID(raw []byte) (uint64, bool) {
	if len(raw) < len(fastPrefix)+3 || raw[0] != '"' || raw[len(raw)-1] != '"' || string(raw[1:1+len(fastPrefix)]) != fastPrefix {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw[1+len(fastPrefix):len(raw)-1]), 10, 64)
	return n, err == nil
}

// tooLarge answers the call an overlong line answered, when it is one made
// here, with the error the go-sdk's call gets for it.
func (c *fastCalls) tooLarge(id any, size, limit int) bool {
	if c == nil {
		return false
	}
	s, ok := id.(string)
	if !ok {
		return false
	}
	n, ok := fastID([]byte(strconv.Quote(s)))
	if !ok {
		return false
	}
	c.deliver(n, fastReply{err: fmt.Errorf("calling %q: %w", "tools/call", &jsonrpc.Error{
		Code:    codeOutputTooLarge,
		Message: fmt.Sprintf("%s%d bytes, over the limit of %d bytes (max_output)", tooLargePrefix, size, limit),
	})})
	return true
}

func (c *fastCalls) deliver(n uint64, r fastReply) {
	c.mu.Lock()
	ch := c.waiting[n]
	if ch != nil {
		delete(c.waiting, n)
		c.n.Add(-1)
		c.idleLocked()
	}
	c.mu.Unlock()
	if ch != nil {
		ch <- r // buffered: one answer per call
	}
}

// stop fails every waiting call, and every later one, as the go-sdk fails
// its calls when the connection ends: mcp.ErrConnectionClosed (fault
// explains it: the exit, the protocol violation, or Close).
func (c *fastCalls) stop(cause error) {
	if c == nil {
		return
	}
	err := fmt.Errorf("%w: calling %q: %v", mcp.ErrConnectionClosed, "tools/call", cause)
	c.mu.Lock()
	if c.dead == nil {
		c.dead = err
	}
	waiting := c.waiting
	c.waiting = nil
	c.n.Store(0)
	c.idleLocked()
	c.mu.Unlock()
	for _, ch := range waiting {
		ch <- fastReply{err: err}
	}
}

// fastSession returns sess's hot path (nil: none).
func (s *Stdio) fastSession(sess *session, tasks *taskConn) *fastSession {
	s.mu.Lock()
	calls := s.fast
	s.mu.Unlock()
	f := &fastSession{calls: calls, tasks: tasks, sizes: &s.sizes}
	f.newProtocol = sess.init != nil && sess.init.ProtocolVersion >= ProtocolNoPing
	if o := s.opts.Features; o != nil {
		f.answersInput = o.Elicit != nil || o.Sample != nil || len(o.Roots) > 0 || o.ListRoots != nil
	}
	return f
}
