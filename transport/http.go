package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/redact"
)

// HTTPOptions configures an HTTP transport. The zero value and nil are valid.
type HTTPOptions struct {
	// Headers are set on every HTTP request (including the initialize POST,
	// the standalone SSE GET and the session DELETE), e.g. Authorization.
	// Their values are never logged.
	Headers map[string]string

	// Client is the HTTP client to use; default: a client of its own with
	// http.DefaultTransport's settings. Headers are added on top of its
	// Transport.
	Client *http.Client

	// Logger receives the transport's diagnostics. Default: a null logger.
	Logger hclog.Logger

	// OnListChanged, when set, is called for each list_changed
	// notification the server sends on the session's SSE stream (it must
	// not block).
	OnListChanged func(ListKind)

	// Features configures the client features offered to the server (log
	// level, elicitation, sampling, roots), on every session. Nil: none.
	Features *ClientOptions

	// OAuth, when set, authorizes the requests with OAuth 2.1 access tokens
	// (MCP 2025-11-25, basic/authorization): the Authorization header is
	// the token's, and a 401 or 403 insufficient_scope answer runs OAuth's
	// refresh or flow and is retried once. Connect then fails with
	// ErrNeedsLogin or ErrAuthorization where it cannot get a token. One
	// OAuth may serve many HTTP transports of the same server (one after
	// another, as the host restarts it). Do not also set an Authorization
	// header in Headers: it would replace the token.
	OAuth *OAuth
}

// HTTP is a Transport to an MCP server over Streamable HTTP (MCP 2025-11-25,
// basic/transports, "Streamable HTTP"), built on the go-sdk's
// StreamableClientTransport.
//
// It adds what the go-sdk leaves to the application: when the server answers
// 404 for the session (it restarted, or expired the session), the spec says
// the client MUST start a new session with a fresh initialize request; HTTP
// does so and retries the failed operation once. A second 404 on the retry is
// returned as ErrConnectionLost. A 400 whose body says the session ID is not
// valid (what TypeScript-SDK servers such as server-everything answer for a
// session they lost) is taken for that 404.
type HTTP struct {
	ops
	url      string
	client   *http.Client
	rt       *headerTransport
	logger   hclog.Logger
	onChange func(ListKind)
	copts    *ClientOptions
	oauth    *OAuth

	mu        sync.Mutex
	closed    bool
	sess      *session
	reconnect sync.Mutex // serialises re-initialization after a lost session
	sessions  int        // sessions opened so far (1 after Connect)

	fast *httpFast // the tools/call hot path (http_fast.go)
}

var _ Transport = (*HTTP)(nil)

// NewHTTP returns an unconnected Transport for the Streamable HTTP endpoint
// url. Nothing is sent until Connect.
func NewHTTP(url string, opts *HTTPOptions) *HTTP {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	// A transport of its own, so closing idle connections affects only this
	// backend.
	var base http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()
	if o.Client != nil && o.Client.Transport != nil {
		base = o.Client.Transport
	}
	client := &http.Client{}
	if o.Client != nil {
		*client = *o.Client
	}
	rt := &headerTransport{base: base, headers: o.Headers}
	logger := o.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	// taskRT runs the calls of tools that are tasks (tasks_http.go).
	trt := &taskRT{base: rt, logger: logger}
	client.Transport = trt
	if noTaskLayer {
		client.Transport, trt = rt, nil
	}
	h := &HTTP{url: url, client: client, rt: rt, logger: logger, onChange: o.OnListChanged, copts: o.Features, oauth: o.OAuth}
	h.fast = &httpFast{h: h, tr: trt}
	h.ops = ops{do: h.do, progress: &progressRouter{tapped: true}, calls: &callSet{tapped: true}}
	// Log messages and progress relayed as the SSE body is read (sseTap).
	rt.tap = func(data []byte) { tapLine(h.calls, h.progress, data) }
	return h
}

// headerTransport sets fixed headers on every request, notes the sessions
// the server answered 404 for, and taps the SSE bodies for log messages.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	lost    sync.Map     // session ID -> struct{}: the server answered 404 for it
	tap     func([]byte) // sees every SSE event's data as the go-sdk reads it
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := t.base.RoundTrip(req)
	// Seen here, before the go-sdk fails the connection, so that every call
	// in flight on the session can tell it was lost rather than broken.
	if id := req.Header.Get("Mcp-Session-Id"); err == nil && id != "" {
		if resp.StatusCode == http.StatusBadRequest && staleSession400(resp) {
			// Some servers (the TypeScript SDK's, e.g. server-everything)
			// answer a session they do not know with 400 "No valid session
			// ID provided" instead of the 404 the spec requires (MCP
			// 2025-11-25, basic/transports, session management). It is
			// the same fault: treat it as the 404, so the go-sdk reports
			// ErrSessionMissing instead of breaking the connection.
			resp.StatusCode, resp.Status = http.StatusNotFound, "404 Not Found"
		}
		if resp.StatusCode == http.StatusNotFound {
			t.lost.Store(id, struct{}{})
		}
	}
	if err == nil && t.tap != nil && resp.Body != nil && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = newSSETap(resp.Body, t.tap)
	}
	return resp, err
}

// maxErrorPeek bounds how much of a 400 response's body is read to tell a
// lost session from another bad request.
const maxErrorPeek = 4 << 10

// staleSession400 reports whether a 400 response to a request that carried
// a session ID says the session is unknown (its body, read up to
// maxErrorPeek bytes, mentions a session ID, case-insensitively). The body
// is left readable from its start.
func staleSession400(resp *http.Response) bool {
	if resp.Body == nil {
		return false
	}
	peek, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorPeek))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(peek), resp.Body), resp.Body}
	if err != nil {
		return false
	}
	lower := bytes.ToLower(peek)
	return bytes.Contains(lower, []byte("session id")) || bytes.Contains(lower, []byte("session not found")) ||
		bytes.Contains(lower, []byte("mcp-session-id")) || bytes.Contains(lower, []byte("no valid session"))
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the base
// transport.
func (t *headerTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (h *HTTP) dial(ctx context.Context) (*session, error) {
	t := &mcp.StreamableClientTransport{
		Endpoint:   h.url,
		HTTPClient: h.client,
		// Reconnection of a broken SSE stream is the go-sdk's job; keep it
		// short so a dead server is reported rather than retried for long.
		MaxRetries: 2,
	}
	if h.oauth != nil {
		// A login since the last session (toolhost login) is used now.
		h.oauth.Load(ctx)
		t.OAuthHandler = h.oauth
	}
	cs, err := newClient(h.logger, h.onChange, h.progress, h.copts, h.calls).Connect(ctx, t, sessionOptions(h.copts))
	if err != nil {
		return nil, capErr(err)
	}
	sess := newSession(cs)
	sess.hfast = h.fast
	if h.copts != nil {
		sess.setLogLevel(ctx, h.logger, h.copts.LogLevel)
	}
	return sess, nil
}

// Connect opens a session: the initialize request and the initialized
// notification. Errors: ErrStart when nothing answers at the URL (connection
// refused, unknown host); with HTTPOptions.OAuth, ErrNeedsLogin (no usable
// token and nobody to authorize) or ErrAuthorization (the OAuth flow
// failed); ErrInitialize otherwise (an HTTP error status, a response that
// is not MCP, a timeout).
func (h *HTTP) Connect(ctx context.Context) (*mcp.InitializeResult, error) {
	init, err := h.connect(ctx)
	// The URL may carry a secret (userinfo, ?api_key=): never in a message.
	return init, redact.Error(err)
}

func (h *HTTP) connect(ctx context.Context) (*mcp.InitializeResult, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	if h.sess != nil {
		h.mu.Unlock()
		return nil, errors.New("http transport: Connect called twice")
	}
	h.mu.Unlock()
	sess, err := h.dial(ctx)
	if err != nil {
		if cerr := ctxError(ctx, "initialize"); cerr != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInitialize, h.url, cerr)
		}
		if unreachable(err) {
			return nil, fmt.Errorf("%w: %s: %v", ErrStart, h.url, err)
		}
		for _, sentinel := range []error{ErrNeedsLogin, ErrAuthorization} {
			if errors.Is(err, sentinel) {
				// Not a broken server: it wants a token we do not have.
				// Say so without the go-sdk's layers around it.
				msg := err.Error()
				if i := strings.Index(msg, sentinel.Error()); i >= 0 {
					msg = msg[i+len(sentinel.Error()):]
				} else {
					msg = ": " + msg
				}
				return nil, fmt.Errorf("initialize %s: %w%s", h.url, sentinel, msg)
			}
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrInitialize, h.url, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		sess.cs.Close()
		return nil, ErrClosed
	}
	h.sess = sess
	h.sessions = 1
	return sess.init, nil
}

// Sessions returns how many MCP sessions the transport has opened: 1 after
// Connect, one more for every transparent re-initialization.
func (h *HTTP) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions
}

func unreachable(err error) bool {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &dnsErr) ||
		(errors.As(err, &opErr) && opErr.Op == "dial")
}

func (h *HTTP) current() (*session, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return nil, ErrClosed
	case h.sess == nil:
		return nil, ErrNotConnected
	}
	return h.sess, nil
}

// renew replaces the lost session old with a new one, unless another caller
// already did.
func (h *HTTP) renew(ctx context.Context, old *session) (*session, error) {
	h.reconnect.Lock()
	defer h.reconnect.Unlock()
	h.mu.Lock()
	cur, closed := h.sess, h.closed
	h.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if cur != old {
		return cur, nil
	}
	h.logger.Info("session lost (HTTP 404); re-initializing", "url", redact.URL(h.url))
	sess, err := h.dial(ctx)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		sess.cs.Close()
		return nil, ErrClosed
	}
	h.sess = sess
	h.sessions++
	h.mu.Unlock()
	old.cs.Close() // gone server-side; this releases our side
	h.rt.lost.Delete(old.cs.ID())
	h.mu.Lock()
	return sess, nil
}

func (h *HTTP) do(ctx context.Context, op string, f func(*session) error) error {
	return redact.Error(h.doRaw(ctx, op, f))
}

func (h *HTTP) doRaw(ctx context.Context, op string, f func(*session) error) error {
	sess, err := h.current()
	if err != nil {
		return fmt.Errorf("%s: %w (%w)", op, err, ErrNotSent)
	}
	err = f(sess)
	// Retry once on a new session when the server lost ours (it answered
	// 404 for it, to this call or to another one in flight on the same
	// session): the server did not process the request.
	if err != nil && ctx.Err() == nil && (errors.Is(err, mcp.ErrSessionMissing) || h.lost(sess)) {
		sess, rerr := h.renew(ctx, sess)
		if rerr != nil {
			return fmt.Errorf("%s: %w: session lost and re-initialization failed: %w", op, ErrConnectionLost, h.fault(ctx, rerr))
		}
		err = f(sess)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, h.fault(ctx, err))
	}
	return nil
}

// lost reports whether the server answered 404 for sess, or sess was
// already replaced because of one.
func (h *HTTP) lost(sess *session) bool {
	if _, ok := h.rt.lost.Load(sess.cs.ID()); ok {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sess != sess && !h.closed
}

func (h *HTTP) fault(ctx context.Context, err error) error {
	if cerr := ctxError(ctx, "http"); cerr != nil {
		return cerr
	}
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case errors.Is(err, mcp.ErrSessionMissing):
		return fmt.Errorf("%w: %v", ErrConnectionLost, err)
	case unreachable(err):
		// Refused at dial: the request never left.
		return fmt.Errorf("%w: %w: %v", ErrConnectionLost, ErrNotSent, err)
	case errors.Is(err, mcp.ErrConnectionClosed):
		return fmt.Errorf("%w: %v", ErrConnectionLost, err)
	}
	return err
}

// Close ends the session (the go-sdk sends the session DELETE, bounded to 5s)
// and releases idle connections. Idempotent.
func (h *HTTP) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	// A re-initialization in flight finishes first (it sees closed and
	// releases its new session itself); then the current session is final.
	h.reconnect.Lock()
	h.mu.Lock()
	sess := h.sess
	h.mu.Unlock()
	h.reconnect.Unlock()
	var err error
	if sess != nil {
		err = sess.cs.Close()
	}
	h.fast.close()
	h.client.CloseIdleConnections()
	if h.oauth != nil {
		h.oauth.client.CloseIdleConnections()
	}
	if errors.Is(err, mcp.ErrSessionMissing) {
		err = nil
	}
	return err
}
