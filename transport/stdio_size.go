package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A stdio tool result's size (SizedCaller) is the length of the "result"
// member of the JSON-RPC response that carried it, exactly as the server
// wrote it (insignificant space and members the go-sdk does not know
// included; the jsonrpc and id members and the newline not): the same
// measure as a plugin's, the result's JSON text as the backend produced it.
// It is read, not computed: the go-sdk decodes each response into a
// jsonrpc.Response whose Result is that text, verbatim (a json.RawMessage),
// and a connection under it (sizedConn) sees it on its way up.
//
// The go-sdk assigns request IDs itself and returns only the decoded
// result, so the size travels by ID: CallToolSized puts a sizeSlot in the
// call's context; the go-sdk writes the request through sizedConn.Write
// with that context (jsonrpc2's Connection.Call writes in the caller's
// goroutine, with its ctx), which binds the request's ID to the slot; the
// response with that ID fills the slot in sizedConn.Read before the go-sdk
// hands the response to the call. Whatever the server sends, the size is
// that of the response the go-sdk matched to the call: an answer to an ID
// no call has is ignored by both, a second answer to an ID finds it
// unbound, a response over MaxLineLength reaches the go-sdk as an error
// (lineFilter) and the call fails. A call that ends before its answer
// (a cancellation, a deadline, a lost connection) unbinds its IDs, so a late
// answer fills nothing. A tools/call sent again under the same context (the
// go-sdk's multi round-trip retries, SEP-2322) binds its new ID to the same
// slot: the last answer, the one the go-sdk returns, gives the size. A task
// (tasks.go) answers the go-sdk's tools/call with its tasks/result response
// under the call's ID: sizedConn sits above taskConn, so it measures that.

// sizeSlotKey is the context key of a call's *sizeSlot in the sizeTable t:
// a context that reaches another Stdio's connection (a server's request
// handled during the call, say) binds nothing there.
type sizeSlotKey struct{ t *sizeTable }

// sizeSlot receives one call's result size. Its fields are guarded by the
// sizeTable's mu.
type sizeSlot struct {
	ids  []jsonrpc.ID // the requests bound to it, not yet answered
	size int          // len of the last answer's result
	set  bool         // an answer with a result came
}

// sizeTable binds the IDs of tools/call requests in flight to the slots of
// their callers.
type sizeTable struct {
	mu      sync.Mutex
	pending map[jsonrpc.ID]*sizeSlot
}

func (t *sizeTable) bind(sl *sizeSlot, id jsonrpc.ID) {
	t.mu.Lock()
	if t.pending == nil {
		t.pending = map[jsonrpc.ID]*sizeSlot{}
	}
	t.pending[id] = sl
	sl.ids = append(sl.ids, id)
	t.mu.Unlock()
}

// fill records r's result size in the slot its ID is bound to, if any, and
// unbinds the ID.
func (t *sizeTable) fill(r *jsonrpc.Response) {
	t.mu.Lock()
	if sl := t.pending[r.ID]; sl != nil {
		delete(t.pending, r.ID)
		sl.size, sl.set = len(r.Result), r.Error == nil && len(r.Result) > 0
	}
	t.mu.Unlock()
}

// release unbinds what is left of sl's IDs and returns its size, and
// whether an answer gave one.
func (t *sizeTable) release(sl *sizeSlot) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range sl.ids {
		if t.pending[id] == sl {
			delete(t.pending, id)
		}
	}
	sl.ids = nil
	return sl.size, sl.set
}

// waiting counts the IDs still bound (tests).
func (t *sizeTable) waiting() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending)
}

// sizedTransport is an mcp.Transport whose connection is inner's wrapped in
// a sizedConn.
type sizedTransport struct {
	inner mcp.Transport
	sizes *sizeTable
	meta  *sessionMeta // captures the go-sdk's per-request _meta (stdio_fast.go); nil: none
}

func (t *sizedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &sizedConn{Connection: c, sizes: t.sizes, meta: t.meta}, nil
}

// sizedConn is the mcp.Connection the go-sdk's client uses: it binds the
// IDs of tools/call requests made with a sizeSlot in their context and
// fills the slots from the responses.
type sizedConn struct {
	mcp.Connection
	sizes *sizeTable
	meta  *sessionMeta
}

// Write implements mcp.Connection.
func (c *sizedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if c.meta != nil {
		c.meta.capture(msg)
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" && req.IsCall() {
		if sl, ok := ctx.Value(sizeSlotKey{c.sizes}).(*sizeSlot); ok {
			// Bound before it is sent: the answer may come at once.
			c.sizes.bind(sl, req.ID)
		}
	}
	return c.Connection.Write(ctx, msg)
}

// Read implements mcp.Connection.
func (c *sizedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Response); ok {
		c.sizes.fill(r)
	}
	return msg, err
}

var _ SizedCaller = (*Stdio)(nil)

// CallToolSized implements SizedCaller: it is CallTool that also returns
// the length in bytes of the "result" member of the server's response, as
// the server wrote it (see above); 0 with an error.
func (s *Stdio) CallToolSized(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, int, error) {
	sl := &sizeSlot{}
	res, err := s.CallTool(context.WithValue(ctx, sizeSlotKey{&s.sizes}, sl), p)
	size, ok := s.sizes.release(sl)
	if err != nil {
		return res, 0, err
	}
	if !ok {
		// Not expected: every result reaches the go-sdk as a response
		// through sizedConn. Measured the slow way rather than wrongly.
		enc, err := json.Marshal(res)
		if err != nil {
			return nil, 0, fmt.Errorf("tools/call: encoding the result: %w", err)
		}
		return res, len(enc), nil
	}
	return res, size, nil
}
