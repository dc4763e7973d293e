package gateway

// The request guard: what one client of the gateway may make it do, so that
// a hostile client cannot hurt the others (issue 21, the JSON-RPC side).
//
//   - Every POST body is read before the go-sdk: the id of every request
//     must be one the go-sdk echoes exactly (scanBody), and a JSON-RPC
//     batch is refused in a session that negotiated 2025-06-18 or later
//     (which removed batching), whatever the MCP-Protocol-Version header
//     says, and beyond MaxBatch messages anywhere.
//   - An initialize that would open a session beyond the client's
//     max_sessions is refused (HTTP 429).
//   - A request that reaches a backend beyond the client's (or the
//     session's) max_concurrent in flight is answered at once with a
//     JSON-RPC error (middleware).
//   - A DELETE cancels the session's calls only when the go-sdk will
//     accept it (deleteAccepted, used by inflight.track).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
)

const (
	// CodeTooManyRequests is the JSON-RPC error code of a request refused
	// because its client is at one of its limits (in the range JSON-RPC 2.0
	// §5.1 leaves to implementations, -32000 to -32099; 29 as in HTTP 429):
	// max_concurrent requests in flight (the answer to that request, at
	// once), or max_sessions sessions open (the answer to initialize, with
	// HTTP status 429 Too Many Requests, RFC 6585 §4). The message names
	// the limit and its key.
	CodeTooManyRequests = -32029
	// MaxBatch is the most messages one JSON-RPC batch may hold where
	// batches are allowed: in a session that negotiated 2025-03-26 (the
	// last protocol with batching, removed in 2025-06-18) and over
	// stateless HTTP without an MCP-Protocol-Version header. A longer
	// batch is refused with HTTP 400 and a JSON-RPC error -32600 (invalid
	// request) whose id is null; its requests also count against
	// max_concurrent, one by one.
	MaxBatch = 64
)

// protocol2025_06_18 is the first MCP version without JSON-RPC batching.
const protocol2025_06_18 = "2025-06-18"

// boundedMethods are the requests that reach backends, which max_concurrent
// bounds. Listings are answered from the gateway's own registry.
var boundedMethods = map[string]bool{
	"tools/call": true, "prompts/get": true, "resources/read": true, "completion/complete": true,
}

// guard keeps what the limits need: the HTTP sessions that completed
// initialize, and what each client and session has open or in flight.
type guard struct {
	g *Gateway

	// timeout is [serve] session_timeout as at New (0: none).
	timeout time.Duration

	mu        sync.Mutex
	sessions  map[string]*guardSession   // by Mcp-Session-Id
	clients   map[string]*clientUse      // by client name (ClientHTTP without tokens)
	inSession map[*mcp.ServerSession]int // requests in flight
}

type guardSession struct {
	ss      *mcp.ServerSession
	ps      *profileServer // the profile server it was opened on
	version string         // the protocol version negotiated at initialize
	userID  string         // TokenInfo.UserID at initialize: who may use and DELETE it (the go-sdk's rule)
	client  string         // whose max_sessions slot it holds, once counted
	counted bool

	// [serve] session_timeout, kept here rather than by the go-sdk (its
	// timer does not see the POSTs the fast path serves, fasthttp.go):
	// timer closes the session once no POST of it has been in progress
	// for the timeout; posts counts those in progress. nil timer: no
	// timeout, or the session has ended.
	timer *time.Timer
	posts int

	// The HTTP fast path (fasthttp.go): its calls in flight, by
	// fastCall.key, and the chain it runs them through (fastChain of ps,
	// made at the first).
	live map[string]context.CancelFunc
	mh   mcp.MethodHandler
	asks map[string]chan askReplyMsg // requests to the client awaiting its answer, by id
}

// owns reports whether r comes from the client that opened s: the same
// token's client, when s was opened with one (the go-sdk's rule against
// session hijacking, lookupSession in v1.8.0).
func (s *guardSession) owns(r *http.Request) bool {
	if s.userID == "" {
		return true
	}
	ti := auth.TokenInfoFromContext(r.Context())
	return ti != nil && ti.UserID == s.userID
}

type clientUse struct{ sessions, inflight int }

func newGuard(g *Gateway) *guard {
	return &guard{g: g, timeout: g.serve.SessionTimeout.Std(), sessions: map[string]*guardSession{}, clients: map[string]*clientUse{}, inSession: map[*mcp.ServerSession]int{}}
}

// limits returns the limits of the client of ti (nil: no token) and the
// configuration key that sets them, from the configuration served now.
func (gd *guard) limits(ti *auth.TokenInfo) (config.ClientLimits, string) {
	s := gd.g.cur.Load().cfg.Serve
	lim, key := s.ClientLimits, "[serve]"
	if ti != nil {
		if c := s.Clients[ti.UserID]; c != nil {
			lim, key = c.ClientLimits, "[serve.clients."+ti.UserID+"]"
		}
	}
	if lim.MaxSessions <= 0 {
		lim.MaxSessions = config.DefaultMaxSessions
	}
	if lim.MaxConcurrent <= 0 {
		lim.MaxConcurrent = config.DefaultMaxConcurrent
	}
	return lim, key
}

func (gd *guard) use(client string) *clientUse {
	u := gd.clients[client]
	if u == nil {
		u = &clientUse{}
		gd.clients[client] = u
	}
	return u
}

// unuse forgets a client with nothing open (called with mu held).
func (gd *guard) unuse(client string) {
	if u := gd.clients[client]; u != nil && u.sessions <= 0 && u.inflight <= 0 {
		delete(gd.clients, client)
	}
}

// http checks every POST to /mcp before the go-sdk reads it (see the top of
// this file); other methods pass.
func (gd *guard) http(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		sid := r.Header.Get("Mcp-Session-Id")
		// A batch where none is allowed is refused before its body is
		// read (what is left unread, net/http discards or drops with the
		// connection).
		br := bodyReaders.Get().(*bufio.Reader)
		br.Reset(r.Body)
		defer func() {
			br.Reset(nil)
			bodyReaders.Put(br)
		}()
		if startsArray(br) {
			if msg := gd.batchRefusal(sid, 0); msg != "" {
				writeRPCError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, msg)
				return
			}
		}
		// The body, up to max_body; on a read error, what came, whose
		// refusals come first (as when it was scanned while read).
		var body bytes.Buffer
		_, rerr := io.Copy(&body, br)
		// A tools/call the fast path's parser takes needs no scan: its id
		// as sent is one checkID accepts (plainID), or the scan decides.
		var fc *fastCall
		var sc scanned
		if rerr == nil && bytes.Contains(body.Bytes(), toolsCallMethod) {
			if fc = parseRequest(bytes.TrimSpace(body.Bytes()), nil); fc != nil && !fc.plainID {
				fc = nil
			}
		}
		if fc != nil {
			sc = scanned{n: 1, method: "tools/call", id: fc.id}
		} else {
			var err error
			if sc, err = scanBody(bytes.NewReader(body.Bytes())); err != nil {
				writeRPCError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
				return
			}
		}
		if sc.batch {
			if msg := gd.batchRefusal(sid, sc.n); msg != "" {
				writeRPCError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, msg)
				return
			}
		}
		if rerr != nil {
			if mbe := (*http.MaxBytesError)(nil); errors.As(rerr, &mbe) {
				http.Error(w, fmt.Sprintf("request body exceeds the limit of %d bytes ([serve] max_body)", mbe.Limit), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "reading the request body: "+rerr.Error(), http.StatusBadRequest)
			return
		}
		r.Body = &postBody{Reader: bytes.NewReader(body.Bytes()), b: body.Bytes(), fc: fc}
		if sid != "" {
			defer gd.posting(r, sid)()
		}
		if sid != "" && !sc.batch && sc.id != nil && boundedMethods[sc.method] {
			if msg := gd.busy(r, sid); msg != "" {
				writeRPCError(w, http.StatusOK, sc.id, CodeTooManyRequests, msg)
				return
			}
		}
		if sid != "" || gd.g.serve.Stateless || sc.batch || sc.method != "initialize" {
			next.ServeHTTP(w, r)
			return
		}
		// An initialize that opens a session: it takes one of the
		// client's max_sessions slots, given back unless a session came
		// of it.
		ti := auth.TokenInfoFromContext(r.Context())
		client := ClientHTTP
		if ti != nil {
			client = ti.UserID
		}
		lim, key := gd.limits(ti)
		gd.mu.Lock()
		u := gd.use(client)
		if n := u.sessions; n >= lim.MaxSessions {
			gd.unuse(client)
			gd.mu.Unlock()
			writeRPCError(w, http.StatusTooManyRequests, sc.id, CodeTooManyRequests,
				fmt.Sprintf("too many sessions: client %q has %d open, its limit (%s max_sessions); end one with DELETE, or wait for session_timeout", client, n, key))
			return
		}
		u.sessions++ // held by this request until the session is counted or not
		gd.mu.Unlock()
		next.ServeHTTP(w, r)
		opened := w.Header().Get("Mcp-Session-Id")
		gd.mu.Lock()
		defer gd.mu.Unlock()
		if s := gd.sessions[opened]; opened != "" && s != nil && !s.counted {
			s.counted, s.client = true, client
			return
		}
		gd.clients[client].sessions--
		gd.unuse(client)
	})
}

// batchRefusal returns why a batch of n messages in session sid ("" for
// none) is refused, or "" if it may go on.
func (gd *guard) batchRefusal(sid string, n int) string {
	if sid != "" {
		gd.mu.Lock()
		s := gd.sessions[sid]
		gd.mu.Unlock()
		if s != nil && s.version >= protocol2025_06_18 {
			return fmt.Sprintf("JSON-RPC batching was removed in MCP %s and this session negotiated %s: send one message per POST", protocol2025_06_18, s.version)
		}
	}
	if n > MaxBatch {
		return fmt.Sprintf("a JSON-RPC batch of more than %d messages exceeds the gateway's limit (gateway.MaxBatch): send fewer per POST", MaxBatch)
	}
	return ""
}

// postBody is a POST body the guard has read: the fast path takes its
// bytes as they are (fasthttp.go), the go-sdk reads it.
type postBody struct {
	*bytes.Reader
	b  []byte
	fc *fastCall // the tools/call parseRequest read of b, if any
}

// bodyReaders are the guard's readers of POST bodies (4 KiB buffers).
var bodyReaders = sync.Pool{New: func() any { return bufio.NewReader(nil) }}

func (*postBody) Close() error { return nil }

// posting notes a POST to session sid in progress, from the client that
// opened it, until the returned function is called: the session's timeout
// waits (as the go-sdk's own, sessionInfo.startPOST in v1.8.0: only
// POSTs hold it off).
func (gd *guard) posting(r *http.Request, sid string) func() {
	if gd.timeout <= 0 {
		return func() {}
	}
	gd.mu.Lock()
	defer gd.mu.Unlock()
	s := gd.sessions[sid]
	if s == nil || s.timer == nil || !s.owns(r) {
		return func() {}
	}
	if s.posts == 0 {
		s.timer.Stop()
	}
	s.posts++
	return func() {
		gd.mu.Lock()
		defer gd.mu.Unlock()
		if s.posts--; s.posts == 0 && s.timer != nil {
			s.timer.Reset(gd.timeout)
		}
	}
}

// middleware returns the receiving middleware of ps, a profile's server:
// it learns the version each HTTP session negotiates (for batches) and
// keeps requests that reach backends within max_concurrent.
func (gd *guard) middleware(ps *profileServer) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return gd.limit(ps, next)
	}
}

func (gd *guard) limit(ps *profileServer, next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ss == nil {
			return next(ctx, method, req)
		}
		if method == "initialize" {
			res, err := next(ctx, method, req)
			if ir, ok := res.(*mcp.InitializeResult); ok && err == nil {
				gd.learn(ss, ps, req.GetExtra(), ir.ProtocolVersion)
			}
			return res, err
		}
		if !boundedMethods[method] {
			return next(ctx, method, req)
		}
		release, err := gd.acquire(ss, req.GetExtra())
		if err != nil {
			return nil, err
		}
		defer release()
		return next(ctx, method, req)
	}
}

// learn records an HTTP session that completed initialize, until it ends
// (DELETE, session_timeout, its profile no longer served).
func (gd *guard) learn(ss *mcp.ServerSession, ps *profileServer, extra *mcp.RequestExtra, version string) {
	id := ss.ID()
	if id == "" || gd.g.serve.Stateless || extra == nil || extra.Header == nil {
		return
	}
	s := &guardSession{ss: ss, ps: ps, version: version, live: map[string]context.CancelFunc{}}
	if extra.TokenInfo != nil {
		s.userID = extra.TokenInfo.UserID
	}
	gd.mu.Lock()
	if old := gd.sessions[id]; old != nil {
		old.version = version
		gd.mu.Unlock()
		return
	}
	if gd.timeout > 0 {
		s.timer = time.AfterFunc(gd.timeout, func() { _ = ss.Close() })
	}
	gd.sessions[id] = s
	gd.mu.Unlock()
	// The session's connection ends with it; so does this goroutine.
	go func() {
		_ = ss.Wait()
		gd.mu.Lock()
		defer gd.mu.Unlock()
		if s.timer != nil {
			s.timer.Stop()
			s.timer = nil
		}
		if gd.sessions[id] == s {
			delete(gd.sessions, id)
			if s.counted {
				gd.clients[s.client].sessions--
				gd.unuse(s.client)
			}
		}
	}()
}

// acquire takes a slot for one request of session ss (and, over HTTP, of
// its client) or returns the JSON-RPC error that refuses it (a
// tooManyError: CodeTooManyRequests, and host.ErrRateLimited).
func (gd *guard) acquire(ss *mcp.ServerSession, extra *mcp.RequestExtra) (release func(), err error) {
	overHTTP := extra != nil && extra.Header != nil
	var ti *auth.TokenInfo
	if extra != nil {
		ti = extra.TokenInfo
	}
	lim, key := gd.limits(ti)
	client := clientName(extra)
	gd.mu.Lock()
	defer gd.mu.Unlock()
	var u *clientUse
	if overHTTP {
		u = gd.use(client)
		if u.inflight >= lim.MaxConcurrent {
			gd.unuse(client)
			return nil, tooMany(clientBusy(client, u.inflight, key))
		}
	}
	if n := gd.inSession[ss]; n >= lim.MaxConcurrent {
		if u != nil {
			gd.unuse(client)
		}
		return nil, tooMany(sessionBusy(n, key))
	}
	gd.inSession[ss]++
	if u != nil {
		u.inflight++
	}
	return func() {
		gd.mu.Lock()
		defer gd.mu.Unlock()
		if gd.inSession[ss]--; gd.inSession[ss] <= 0 {
			delete(gd.inSession, ss)
		}
		if u != nil {
			u.inflight--
			gd.unuse(client)
		}
	}, nil
}

func clientBusy(client string, n int, key string) string {
	return fmt.Sprintf("too many requests in flight: client %q has %d, its limit (%s max_concurrent); send it again once one has completed", client, n, key)
}

func sessionBusy(n int, key string) string {
	return fmt.Sprintf("too many requests in flight: this session has %d, the limit (%s max_concurrent); send it again once one has completed", n, key)
}

// busy returns the refusal of a request that reaches a backend, sent by
// the client of r in its session sid, when that client or session is at
// max_concurrent now, or "". It spares such a request the go-sdk's
// handling (acquire still decides for those it lets through); a session
// the guard does not know, or not the client's, is left to the go-sdk.
func (gd *guard) busy(r *http.Request, sid string) string {
	if sdkRefuses(r) {
		return ""
	}
	ti := auth.TokenInfoFromContext(r.Context())
	lim, key := gd.limits(ti)
	client := ClientHTTP
	if ti != nil {
		client = ti.UserID
	}
	gd.mu.Lock()
	defer gd.mu.Unlock()
	s := gd.sessions[sid]
	if s == nil || (s.userID != "" && (ti == nil || ti.UserID != s.userID)) {
		return ""
	}
	if u := gd.clients[client]; u != nil && u.inflight >= lim.MaxConcurrent {
		return clientBusy(client, u.inflight, key)
	}
	if n := gd.inSession[s.ss]; n >= lim.MaxConcurrent {
		return sessionBusy(n, key)
	}
	return ""
}

// deleteAccepted reports whether the go-sdk will accept r, a DELETE of
// session id, by its own rules (StreamableHTTPHandler.ServeHTTP and
// lookupSession, go-sdk v1.8.0): a loopback listener and a loopback Host
// (DNS-rebinding protection), a supported MCP-Protocol-Version if any, a
// session that exists, and the token of the client that opened it. The
// go-sdk closes the session before it answers, and that Close waits for the
// session's calls: they must be cancelled before, so the decision cannot
// wait for its answer. (Cross-origin requests are refused before this is
// asked.)
func (gd *guard) deleteAccepted(r *http.Request, id string) bool {
	if sdkRefuses(r) {
		return false
	}
	gd.mu.Lock()
	s := gd.sessions[id]
	gd.mu.Unlock()
	if s == nil {
		return false
	}
	if s.userID != "" {
		ti := auth.TokenInfoFromContext(r.Context())
		if ti == nil || ti.UserID != s.userID {
			return false
		}
	}
	return true
}

// sdkRefuses reports whether the go-sdk refuses r before it looks at the
// session (StreamableHTTPHandler.ServeHTTP, v1.8.0): a foreign Host on a
// loopback listener (403, DNS-rebinding protection), or an
// MCP-Protocol-Version it does not support (400).
func sdkRefuses(r *http.Request) bool {
	if rebinding(r) {
		return true
	}
	// Versions from 2026-07-28 on that it does not know, it lets through
	// (they are decided per request).
	v := r.Header.Get("Mcp-Protocol-Version")
	return v != "" && !slices.Contains(mcp.SupportedProtocolVersions(), v) && v < "2026-07-28"
}
