package gateway

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inflight cancels the calls of a client that has gone. The go-sdk lets a
// closed session's handlers run to completion (its connection drains them),
// and does not cancel a call whose HTTP request was cut; but the gateway
// keeps no event store, so such a client can never receive the result, and
// the backend must not stay busy for it. A call's context is therefore also
// cancelled when:
//   - the HTTP request that carried it ends before its response (the client
//     disconnected),
//   - its session is DELETEd (MCP 2025-11-25 basic/transports, "Session
//     Management"),
//   - its stdio connection ends (ServeTransport).
type inflight struct {
	mu    sync.Mutex
	calls map[*call]struct{}
	next  atomic.Uint64 // request tags
}

type call struct {
	ss     *mcp.ServerSession
	tag    string // the tag of the HTTP request that carried it ("" on stdio)
	cancel context.CancelFunc
}

// tagHeader carries a request's tag from the HTTP middleware to the tool
// handler (RequestExtra.Header). The middleware always sets it, so a
// client cannot choose another request's tag.
const tagHeader = "X-Toolhost-Request-Tag"

// begin returns ctx, cancelled as described above, and the function to
// call when the call is done.
func (f *inflight) begin(ctx context.Context, ss *mcp.ServerSession, extra *mcp.RequestExtra) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	c := &call{ss: ss, cancel: cancel}
	if extra != nil && extra.Header != nil {
		c.tag = extra.Header.Get(tagHeader)
	}
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[*call]struct{}{}
	}
	f.calls[c] = struct{}{}
	f.mu.Unlock()
	return ctx, func() {
		f.mu.Lock()
		delete(f.calls, c)
		f.mu.Unlock()
		cancel()
	}
}

// end cancels the calls in flight for which match is true.
func (f *inflight) end(match func(*call) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.calls {
		if match(c) {
			c.cancel()
		}
	}
}

// track tags every request, cancels the calls of a request whose client
// goes away before it is answered, and the calls of a session its client
// DELETEs. A DELETE cancels them only if accepted says the go-sdk will
// accept it: the go-sdk closes the session before it answers, and that
// waits for the session's calls, so they are cancelled before next runs; a
// DELETE the go-sdk refuses (403: another client's token, a foreign Host;
// 404) must leave them running.
func (f *inflight) track(next http.Handler, accepted func(r *http.Request, session string) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodDelete && id != "" && accepted(r, id) {
			f.end(func(c *call) bool { return c.ss != nil && c.ss.ID() == id })
		}
		tag := strconv.FormatUint(f.next.Add(1), 10)
		r.Header[tagHeader] = []string{tag} // tagHeader is in canonical form
		stop := context.AfterFunc(r.Context(), func() {
			f.end(func(c *call) bool { return c.tag == tag })
		})
		defer stop()
		next.ServeHTTP(w, r)
	})
}

// closeNotifier wraps a Transport so that the end of its connection (the
// client went away: EOF, or a failed write) is signalled on closed.
type closeNotifier struct {
	mcp.Transport
	closed chan struct{}
	once   sync.Once
}

func (t *closeNotifier) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &notifyingConn{Connection: c, t: t}, nil
}

type notifyingConn struct {
	mcp.Connection
	t *closeNotifier
}

func (c *notifyingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		c.t.once.Do(func() { close(c.t.closed) })
	}
	return msg, err
}

func (c *notifyingConn) Close() error {
	c.t.once.Do(func() { close(c.t.closed) })
	return c.Connection.Close()
}
