package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
)

// This file holds the gateway's defences against hostile HTTP clients
// that sit in front of every endpoint (issue 21, items 3 and 5): the
// connection limits ([serve] max_connections, max_connections_per_peer),
// the DNS-rebinding Host check on loopback, the /metrics token, and the
// closing of a connection whose request is answered before its body was
// read.

// refusalLogInterval is the least time between two log lines about
// connections refused over a limit: a flood must not flood the log. Each
// line says how many were refused since the previous one.
const refusalLogInterval = 10 * time.Second

// limitListener is a net.Listener that bounds the connections open at
// once, in total and per peer. A connection over a limit is closed as
// soon as it is accepted (with a TCP reset, so that the gateway keeps no
// TIME_WAIT state for it), counted in Metrics, and logged at most once per
// refusalLogInterval. A connection counts until its Close.
type limitListener struct {
	net.Listener
	max, perPeer int
	logger       hclog.Logger
	metrics      *Metrics // may be nil

	mu    sync.Mutex
	total int
	peers map[netip.Addr]int

	logMu      sync.Mutex
	lastLog    time.Time
	suppressed map[string]int // refusals by limit since lastLog
}

func newLimitListener(ln net.Listener, max, perPeer int, logger hclog.Logger, m *Metrics) *limitListener {
	return &limitListener{Listener: ln, max: max, perPeer: perPeer, logger: logger, metrics: m,
		peers: map[netip.Addr]int{}, suppressed: map[string]int{}}
}

// peerOf is the address a per-peer limit counts by: the IPv4 address, or
// the IPv6 /64 (one host usually holds a whole /64, so counting single
// IPv6 addresses would bound nothing).
func peerOf(a net.Addr) netip.Addr {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	ip := ap.Addr().Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.Addr()
	}
	return ip
}

// Accept returns the next connection within the limits; connections over
// them are closed on the way.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		peer := peerOf(c.RemoteAddr())
		var limit string
		l.mu.Lock()
		switch {
		case l.total >= l.max:
			limit = "max_connections"
		case l.peers[peer] >= l.perPeer:
			limit = "max_connections_per_peer"
		default:
			l.total++
			l.peers[peer]++
		}
		l.mu.Unlock()
		if limit == "" {
			l.metrics.connOpened()
			return &limitedConn{Conn: c, l: l, peer: peer}, nil
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
		l.refused(limit, peer)
	}
}

func (l *limitListener) release(peer netip.Addr) {
	l.mu.Lock()
	l.total--
	if l.peers[peer]--; l.peers[peer] <= 0 {
		delete(l.peers, peer)
	}
	l.mu.Unlock()
	l.metrics.connClosed()
}

func (l *limitListener) refused(limit string, peer netip.Addr) {
	l.metrics.connRefused(limit)
	l.logMu.Lock()
	defer l.logMu.Unlock()
	l.suppressed[limit]++
	now := time.Now()
	if !l.lastLog.IsZero() && now.Sub(l.lastLog) < refusalLogInterval {
		return
	}
	l.lastLog = now
	args := []any{"last_peer", peer.String(), "max_connections", l.max, "max_connections_per_peer", l.perPeer}
	for _, k := range []string{"max_connections", "max_connections_per_peer"} {
		if n := l.suppressed[k]; n > 0 {
			args = append(args, "refused_"+k, n)
		}
	}
	clear(l.suppressed)
	l.logger.Warn(fmt.Sprintf("HTTP connections over a [serve] limit closed at once (this line repeats at most every %s)", refusalLogInterval), args...)
}

// connMetrics are the connection limiter's metrics.
type connMetrics struct {
	open    prometheus.Gauge
	refused *prometheus.CounterVec
}

func newConnMetrics(reg *prometheus.Registry) connMetrics {
	c := connMetrics{
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcp_http_connections", Help: "HTTP connections open to the gateway.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcp_http_connections_refused_total", Help: "HTTP connections closed as soon as accepted, by the [serve] limit they were over.",
		}, []string{"limit"}),
	}
	reg.MustRegister(c.open, c.refused)
	return c
}

func (m *Metrics) connOpened() {
	if m != nil {
		m.conns.open.Inc()
	}
}

func (m *Metrics) connClosed() {
	if m != nil {
		m.conns.open.Dec()
	}
}

func (m *Metrics) connRefused(limit string) {
	if m != nil {
		m.conns.refused.WithLabelValues(limit).Inc()
	}
}

// limitedConn is a connection counted by its limitListener until Close.
type limitedConn struct {
	net.Conn
	l    *limitListener
	peer netip.Addr
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.peer) })
	return err
}

// isLoopbackHost is go-sdk's rule (internal/util.IsLoopback, v1.8.0) for a
// Host header or address: "localhost" or a loopback IP, with or without a
// port and brackets.
func isLoopbackHost(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// rebinding reports whether r arrived on a loopback address with a Host
// header that is not loopback: a page whose name was rebound to 127.0.0.1
// (MCP 2025-11-25 basic/security_best_practices, "Local MCP Server
// Compromise"; the same rule as go-sdk's StreamableHTTPHandler applies to
// /mcp).
func rebinding(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && isLoopbackHost(local.String()) && !isLoopbackHost(r.Host)
}

// front is the outermost handler: it refuses a foreign Host on a loopback
// listener with 403 on every endpoint, and makes any response written
// before the request's body was read to its end close the connection
// (Connection: close), so that net/http does not first wait to drain up
// to 256 KiB of a body the client may withhold (a refusal must not wait
// for the body it refuses).
func front(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			b := &eofBody{ReadCloser: r.Body}
			r.Body = b
			cw := &closeUnread{ResponseWriter: w, body: b}
			w = cw
			defer func() {
				cw.before() // for the response net/http writes if the handler wrote none
				if cw.closing.Load() {
					// net/http still drains up to 256 KiB of the body when
					// it closes it after the handler: a withheld body would
					// hold the connection until read_timeout. That read
					// gets unreadDrain, no more: enough for a client still
					// sending a body it has (whose connection, closed with
					// its bytes unread, would be reset before it read the
					// answer), not for one that withholds it.
					_ = http.NewResponseController(cw.ResponseWriter).SetReadDeadline(time.Now().Add(unreadDrain))
				}
			}()
		}
		if rebinding(r) {
			http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q (a loopback listener answers only a loopback Host: DNS rebinding)", r.Host), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// unreadDrain bounds how long net/http may go on reading the body of a
// request answered before its body was read (front), before it closes the
// connection.
const unreadDrain = 100 * time.Millisecond

// eofBody is a request body that records whether it was read to its end.
type eofBody struct {
	io.ReadCloser
	eof atomic.Bool
}

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof.Store(true)
	}
	return n, err
}

// closeUnread adds "Connection: close" to a response whose headers are
// written before the request body reached EOF.
type closeUnread struct {
	http.ResponseWriter
	body    *eofBody
	wrote   atomic.Bool
	closing atomic.Bool // the response closes the connection
}

func (w *closeUnread) before() {
	if w.wrote.CompareAndSwap(false, true) && !w.body.eof.Load() {
		w.closing.Store(true)
		w.ResponseWriter.Header().Set("Connection", "close")
	}
}

func (w *closeUnread) WriteHeader(code int) {
	w.before()
	w.ResponseWriter.WriteHeader(code)
}

func (w *closeUnread) Write(p []byte) (int, error) {
	w.before()
	return w.ResponseWriter.Write(p)
}

// Flush is http.Flusher's, for handlers that assert it.
func (w *closeUnread) Flush() {
	w.before()
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection (deadlines,
// flushes, full duplex).
func (w *closeUnread) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// requireBearer answers 401 unless the request carries "Authorization:
// Bearer TOKEN" with TOKEN equal to tok() (compared in constant time, by
// SHA-256, so that its length does not show either; RFC 6750 section 3
// for the WWW-Authenticate header). tok() "" requires nothing. tok is
// called per request, so the token follows Host.Apply.
func requireBearer(tok func() string, realm string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := tok()
		if t == "" {
			next.ServeHTTP(w, r)
			return
		}
		want := sha256.Sum256([]byte(t))
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		sum := sha256.Sum256([]byte(got))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer realm=%q", realm))
			http.Error(w, "Unauthorized: "+realm+" requires its bearer token ([serve] metrics_token)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
