package gateway

import (
	"context"
	"errors"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Slow consumers. The go-sdk server sends a broadcast notification
// (list_changed, resources/updated) to a profile's sessions one after the
// other, each write blocking until the client's socket takes the bytes and
// with nothing that bounds it. One client that opens its standalone SSE
// stream (GET /mcp) and never reads it would therefore, once its socket
// buffers fill, stall that notification for every session after it, and
// leave one goroutine blocked per later change. The gateway bounds what
// such a client costs to its own session:
//
//   - broadcasts are queued per session (at most [serve] notify_queue) and
//     written by one goroutine per session, which exists only while that
//     session's queue is not empty; the go-sdk's broadcast never waits;
//   - every write to an HTTP response stream (an SSE event, a flush) has a
//     deadline of [serve] write_timeout: a client that has not taken the
//     bytes by then loses the stream;
//   - a session whose queue is full or whose write timed out is dropped:
//     its calls are cancelled, its streams cut and the session closed (the
//     client may start a new one). Each drop is logged at Warn with the
//     session and the client, and counted in
//     mcp_gateway_sessions_dropped_total{reason}.

// broadcast are the notifications the go-sdk server sends to every session
// of a server (or every subscriber), outside any request: MCP 2025-11-25
// server/tools, server/prompts, server/resources.
var broadcast = map[string]bool{
	"notifications/tools/list_changed":     true,
	"notifications/prompts/list_changed":   true,
	"notifications/resources/list_changed": true,
	"notifications/resources/updated":      true,
}

// Reasons a session is dropped (the reason label of
// mcp_gateway_sessions_dropped_total).
const (
	dropQueueFull    = "queue_full"
	dropWriteTimeout = "write_timeout"
)

// notifier holds the per-session queues of one Gateway's broadcasts.
type notifier struct {
	g      *Gateway
	mu     sync.Mutex
	queues map[*mcp.ServerSession]*notifyQueue // only sessions whose writer runs
}

// notifyQueue is one session's broadcasts waiting for its writer.
type notifyQueue struct {
	items   []queued
	dropped bool // the session is being dropped: nothing more is queued
}

type queued struct {
	ctx    context.Context
	method string
	req    mcp.Request
	next   mcp.MethodHandler
}

// sending is the sending middleware of every profile server: a broadcast
// is queued for its session's writer and reported sent; everything else
// (responses' notifications, requests) goes through as before.
func (n *notifier) sending(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if !broadcast[method] || ss == nil {
			return next(ctx, method, req)
		}
		// The go-sdk cancels ctx once every session has been handed the
		// broadcast: the writer keeps its values only.
		n.enqueue(ss, queued{ctx: context.WithoutCancel(ctx), method: method, req: req, next: next})
		return nil, nil
	}
}

func (n *notifier) enqueue(ss *mcp.ServerSession, it queued) {
	n.mu.Lock()
	q := n.queues[ss]
	start := q == nil
	if start {
		if n.queues == nil {
			n.queues = map[*mcp.ServerSession]*notifyQueue{}
		}
		q = &notifyQueue{}
		n.queues[ss] = q
	}
	switch {
	case q.dropped:
		n.mu.Unlock()
		return
	case len(q.items) >= n.g.serve.NotifyQueue:
		q.dropped, q.items = true, nil
		n.mu.Unlock()
		// Not here: the go-sdk is broadcasting to the other sessions.
		go n.g.drop(ss, "", dropQueueFull)
		return
	}
	q.items = append(q.items, it)
	n.mu.Unlock()
	if start {
		go n.write(ss, q)
	}
}

// write sends ss's queued broadcasts in order, and ends when the queue is
// empty (or the session is being dropped). A failed write is the go-sdk's
// to report: a session without a standalone stream has nowhere to receive
// a broadcast; one whose write timed out is dropped by streamWriter.
func (n *notifier) write(ss *mcp.ServerSession, q *notifyQueue) {
	for {
		n.mu.Lock()
		if q.dropped || len(q.items) == 0 {
			if n.queues[ss] == q {
				delete(n.queues, ss)
			}
			n.mu.Unlock()
			return
		}
		it := q.items[0]
		q.items[0] = queued{}
		q.items = q.items[1:]
		n.mu.Unlock()
		ctx, cancel := context.WithTimeout(it.ctx, n.g.serve.WriteTimeout.Std())
		_, _ = it.next(ctx, it.method, it.req)
		cancel()
	}
}

// drop ends a session that cannot keep up: its calls are cancelled, its
// HTTP streams cut (a write blocked on them fails now) and the session
// closed. client names it in the log when known ("" otherwise).
func (g *Gateway) drop(ss *mcp.ServerSession, client, reason string) {
	if client == "" {
		client = g.streams.client(ss.ID())
	}
	info := ""
	if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil {
		info = ip.ClientInfo.Name
	}
	g.logger.Warn("dropping a session that does not keep up with its notifications", "reason", reason,
		"session", ss.ID(), "client", client, "client_info", info,
		"notify_queue", g.serve.NotifyQueue, "write_timeout", g.serve.WriteTimeout.Std())
	if g.opts.Metrics != nil {
		g.opts.Metrics.sessionDropped(reason)
	}
	g.calls.end(func(c *call) bool { return c.ss == ss })
	g.streams.cut(ss.ID())
	ss.Close()
}

// streams are the HTTP response streams open now, by session ID, so that
// a dropped session's can be cut.
type streams struct {
	mu   sync.Mutex
	open map[string]map[*streamWriter]struct{}
}

func (s *streams) add(id string, w *streamWriter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		s.open = map[string]map[*streamWriter]struct{}{}
	}
	if s.open[id] == nil {
		s.open[id] = map[*streamWriter]struct{}{}
	}
	s.open[id][w] = struct{}{}
}

func (s *streams) remove(id string, w *streamWriter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open[id], w)
	if len(s.open[id]) == 0 {
		delete(s.open, id)
	}
}

// client names the client of an open stream of session id ("" if none).
func (s *streams) client(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.open[id] {
		return w.client
	}
	return ""
}

// cut makes every write to the streams of session id fail from now on.
func (s *streams) cut(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.open[id] {
		w.cut()
	}
}

// writeDeadlines gives every response of next a streamWriter: each write
// and flush must complete within [serve] write_timeout (a deadline set
// before it and lifted after it, http.ResponseController.SetWriteDeadline),
// so that a long-lived SSE stream stays open while a client that stops
// reading loses it. The first write that times out drops the request's
// session (Mcp-Session-Id), if any.
func (g *Gateway) writeDeadlines(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &streamWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: g.serve.WriteTimeout.Std()}
		id := r.Header.Get("Mcp-Session-Id")
		if id != "" {
			client := ClientHTTP
			if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && ti.UserID != "" {
				client = ti.UserID
			}
			sw.client = client
			sw.stalled = func() { go g.dropID(id, client) }
			g.streams.add(id, sw)
			defer g.streams.remove(id, sw)
		}
		next.ServeHTTP(sw, r)
	})
}

// dropID drops the session with ID id, in whichever profile it is.
func (g *Gateway) dropID(id, client string) {
	for _, ps := range g.cur.Load().servers {
		for ss := range ps.srv.Sessions() {
			if ss.ID() == id {
				g.drop(ss, client, dropWriteTimeout)
				return
			}
		}
	}
}

// streamWriter is an http.ResponseWriter whose writes and flushes each
// have a deadline. It implements Unwrap for http.ResponseController.
type streamWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	client  string // the client's name ([serve.clients], or "http")
	stalled func() // called once, at the first write that times out (nil: none)
	once    sync.Once
	isCut   atomic.Bool
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.arm()
	n, err := w.ResponseWriter.Write(p)
	w.disarm(err)
	return n, err
}

// FlushError flushes with a deadline (http.ResponseController.Flush uses
// it).
func (w *streamWriter) FlushError() error {
	w.arm()
	err := w.rc.Flush()
	w.disarm(err)
	return err
}

// Flush implements http.Flusher for callers that assert it.
func (w *streamWriter) Flush() { _ = w.FlushError() }

// Unwrap gives http.ResponseController the writer underneath.
func (w *streamWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *streamWriter) arm() {
	if w.isCut.Load() {
		_ = w.rc.SetWriteDeadline(time.Now())
		return
	}
	// A writer that cannot have deadlines (not a net/http server's) is
	// left as it is.
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
}

func (w *streamWriter) disarm(err error) {
	switch {
	case err == nil:
		if !w.isCut.Load() {
			// Idle between writes is fine: the deadline is per write.
			_ = w.rc.SetWriteDeadline(time.Time{})
		}
	case errors.Is(err, os.ErrDeadlineExceeded) && !w.isCut.Load() && w.stalled != nil:
		w.once.Do(w.stalled)
	}
}

// cut makes the write in progress, if any, and every later one fail now.
func (w *streamWriter) cut() {
	w.isCut.Store(true)
	_ = w.rc.SetWriteDeadline(time.Now())
}
