package native

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/toolhost/toolhost/sandbox/egress"
)

// The relay's bounds.
const (
	// relayMaxConns bounds the connections one relay serves at once
	// (proxy and forwards together; an upstream connection is not
	// counted). Past it, each listener holds the one connection it
	// accepted and new ones wait in the listen backlog.
	relayMaxConns = 256
	// relayMaxHeader bounds a proxy request's header (request line and
	// fields) and a SOCKS5 handshake, in bytes; past it the proxy answers
	// 431 and closes.
	relayMaxHeader = 64 << 10
	// relayHeaderTimeout bounds the time a client has to send a request's
	// header (or a SOCKS5 handshake) from the moment the proxy waits for
	// it.
	relayHeaderTimeout = 30 * time.Second
	// relayIdleTimeout closes a relayed connection when neither direction
	// has carried a byte for this long.
	relayIdleTimeout = 10 * time.Minute
	// relayDialTimeout bounds a dial to an allowed target, name resolution
	// included.
	relayDialTimeout = 30 * time.Second
	// relayMaxNames bounds the names given a 127.77.x.y address; further
	// literal names are reachable through the proxy only.
	relayMaxNames = 1024
)

// relay carries one start's allowed egress. The server's network
// namespace has only its loopback; the child binds the relay's listeners
// there (listen) and hands them to toolhost, which accepts the server's
// connections on them and dials the allowed targets itself, through the
// plugins' allowlist (package sandbox/egress: the same entries, the same
// resolved-address checks, the same literal exemption).
//
//   - The proxy, at ProxyAddr: an HTTP/1.1 proxy (CONNECT, and
//     absolute-form http:// requests, each one checked and sent on its own
//     upstream connection with the hop-by-hop fields removed, RFC 9110
//     section 7.6.1) and a SOCKS5 proxy (RFC 1928: no authentication, the
//     CONNECT command, IPv4, IPv6 and domain-name addresses) on the same
//     port: a first byte 0x05 is SOCKS5. env points HTTP_PROXY,
//     HTTPS_PROXY and ALL_PROXY at it.
//   - Transparent forwards, for clients that ignore the proxy variables
//     (Node 20's fetch; Go's, for loopback targets). For each literal
//     (non-glob) entry: a loopback IP literal with a port (127.0.0.1:8081,
//     [::1]:8081) is bound as itself inside, and relayed to the same
//     address on the host's loopback; a host name is given an address
//     127.77.x.y (in the order of the entries, from 127.77.0.1), written
//     in the generated /etc/hosts, and bound on the entry's port, or on 80
//     and 443 when it has none; the forward relays the bytes to the name
//     (TLS passes through end to end). "localhost" with a port is bound on
//     127.0.0.1. Other IP literals (public, private, link-local), loopback
//     literals without a port, and an entry whose address is taken
//     (ProxyAddr) are reachable through the proxy only: a namespace's
//     loopback cannot stand in for them.
//
// A denied target gets an HTTP 403 naming the host and allowed_hosts, a
// SOCKS5 reply 0x02 (connection not allowed by ruleset), or a closed
// connection (a forward); each is counted in the Launcher's denials and
// the first of each host is logged at Warn ("sandbox denied egress").
type relay struct {
	pol    *egress.Policy // nil: no network
	logger hclog.Logger
	den    *denials
	fwds   []forward
	names  []mappedName

	// Bounds (the relay* constants; tests lower them).
	maxConns      int
	maxHeader     int64
	headerTimeout time.Duration
	idleTimeout   time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	sem    chan struct{}
	active atomic.Int64
	// acceptFailed: an accept error was logged.
	acceptFailed atomic.Bool

	mu     sync.Mutex
	closed bool
	lns    []net.Listener
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// forward is one transparent forward: listen is bound inside the
// namespace, target ("host:port") dialed through the policy.
type forward struct {
	listen, target string
}

// mappedName is a name of the generated /etc/hosts.
type mappedName struct {
	addr, name string
}

// newRelay plans the egress of a server allowed hosts (nil: no network).
// A malformed entry is an error wrapping ErrSpec and egress.ErrEntry.
func newRelay(hosts []string, logger hclog.Logger, d *denials) (*relay, error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if d == nil {
		d = &denials{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &relay{
		logger: logger, den: d,
		maxConns: relayMaxConns, maxHeader: relayMaxHeader,
		headerTimeout: relayHeaderTimeout, idleTimeout: relayIdleTimeout,
		ctx: ctx, cancel: cancel,
		conns: make(map[net.Conn]struct{}),
	}
	if len(hosts) == 0 {
		return r, nil
	}
	pol, err := egress.New(hosts)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	pol.DialTimeout = relayDialTimeout
	r.pol = pol
	taken := map[string]bool{ProxyAddr: true}
	add := func(listen, target string) {
		if !taken[listen] {
			taken[listen] = true
			r.fwds = append(r.fwds, forward{listen, target})
		}
	}
	addrOf := map[string]string{}
	for _, e := range pol.Entries() {
		if e.Glob {
			continue
		}
		if ip, err := netip.ParseAddr(e.Host); err == nil {
			if ip.IsLoopback() && e.Port != "" {
				a := net.JoinHostPort(ip.String(), e.Port)
				add(a, a)
			}
			continue
		}
		if e.Host == "localhost" {
			if e.Port != "" {
				add(net.JoinHostPort("127.0.0.1", e.Port), net.JoinHostPort(e.Host, e.Port))
			}
			continue
		}
		a, ok := addrOf[e.Host]
		if !ok {
			if len(r.names) >= relayMaxNames {
				continue
			}
			n := len(r.names) + 1
			a = fmt.Sprintf("127.77.%d.%d", n>>8, n&0xff)
			addrOf[e.Host] = a
			r.names = append(r.names, mappedName{a, e.Host})
		}
		ports := []string{e.Port}
		if e.Port == "" {
			ports = []string{"80", "443"}
		}
		for _, p := range ports {
			add(net.JoinHostPort(a, p), net.JoinHostPort(e.Host, p))
		}
	}
	return r, nil
}

// listen returns the addresses the child binds inside its namespace
// (nsinit.Config.Listen), in order: ProxyAddr, then the forwards; empty
// when the server has no network.
func (r *relay) listen() []string {
	if r.pol == nil {
		return nil
	}
	out := []string{ProxyAddr}
	for _, f := range r.fwds {
		out = append(out, f.listen)
	}
	return out
}

// files returns the generated files of the server's /etc as guest path →
// content, with or without network:
//
//   - /etc/hosts: localhost (127.0.0.1, ::1) and the names of the
//     transparent forwards with their 127.77.x.y addresses;
//   - /etc/resolv.conf: "nameserver 127.0.0.1" with one attempt of one
//     second. Nothing listens on port 53 in the namespace, so a lookup of
//     any other name fails at once (connection refused) instead of waiting
//     for a resolver that cannot be reached: a server reaches the names
//     allowed by a glob through the proxy, which resolves them in toolhost.
func (r *relay) files() map[string]string {
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	for _, n := range r.names {
		fmt.Fprintf(&b, "%s\t%s\n", n.addr, n.name)
	}
	return map[string]string{
		"/etc/hosts":       b.String(),
		"/etc/resolv.conf": "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
	}
}

// env returns the variables added to the server's environment when it has
// network: HTTP_PROXY, HTTPS_PROXY (and their lower-case forms, the only
// ones curl reads for http) = http://ProxyAddr; ALL_PROXY, all_proxy =
// socks5h://ProxyAddr (names resolved by the proxy); NO_PROXY, no_proxy =
// localhost,127.0.0.1,::1, so that the server's own loopback services stay
// direct (Go never proxies loopback; curl, Python and Node honour
// NO_PROXY), loopback entries being reached through their forwards; and
// NODE_USE_ENV_PROXY=1, which makes Node's fetch (>= 22.21, 24.5) and
// http use the proxy variables.
func (r *relay) env() []string {
	if r.pol == nil {
		return nil
	}
	h, s := "http://"+ProxyAddr, "socks5h://"+ProxyAddr
	const no = "localhost,127.0.0.1,::1"
	return []string{
		"HTTP_PROXY=" + h, "HTTPS_PROXY=" + h, "http_proxy=" + h, "https_proxy=" + h,
		"ALL_PROXY=" + s, "all_proxy=" + s,
		"NO_PROXY=" + no, "no_proxy=" + no,
		"NODE_USE_ENV_PROXY=1",
	}
}

// serve starts relaying connections accepted on lns (one per listen()
// address, in order; extra ones are closed) and returns; close stops it.
// The relay owns lns from then on.
func (r *relay) serve(lns []net.Listener) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		for _, ln := range lns {
			ln.Close()
		}
		return
	}
	r.lns = append(r.lns, lns...)
	if r.sem == nil {
		r.sem = make(chan struct{}, r.maxConns)
	}
	for i, ln := range lns {
		var h func(*idleConn)
		switch {
		case r.pol == nil || i > len(r.fwds):
			ln.Close()
			continue
		case i == 0:
			h = r.proxy
		default:
			f := r.fwds[i-1]
			h = func(c *idleConn) { r.forward(c, f) }
		}
		r.wg.Add(1)
		go r.acceptLoop(ln, h)
	}
	r.mu.Unlock()
}

func (r *relay) acceptLoop(ln net.Listener, h func(*idleConn)) {
	defer r.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if r.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// EMFILE and the like: wait a little rather than spin, and
			// say so once per relay.
			if !r.acceptFailed.Swap(true) {
				r.logger.Warn("sandbox egress relay: accept failed; retrying every 50ms", "error", err)
			}
			t := time.NewTimer(50 * time.Millisecond)
			select {
			case <-t.C:
			case <-r.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		// At the limit, this listener waits (holding the one connection it
		// accepted) and the next ones wait in its backlog.
		select {
		case r.sem <- struct{}{}:
		case <-r.ctx.Done():
			c.Close()
			return
		}
		if !r.track(c) {
			c.Close()
			<-r.sem
			return
		}
		r.active.Add(1)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer func() { <-r.sem }()
			defer r.active.Add(-1)
			defer r.untrack(c)
			h(&idleConn{Conn: c, idle: r.idleTimeout})
		}()
	}
}

// track registers c to be closed by close; false once the relay is closed.
func (r *relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

// untrack closes c and forgets it.
func (r *relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.Close()
}

// close stops accepting, closes every relayed connection and waits for
// the relay's goroutines. It is idempotent.
func (r *relay) close() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		r.cancel()
		for _, ln := range r.lns {
			ln.Close()
		}
		for c := range r.conns {
			c.Close()
		}
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// deny records a refusal of target ("host:port") and logs the first of its
// host.
func (r *relay) deny(target, msg string) {
	host := target
	if h, _, err := net.SplitHostPort(target); err == nil {
		host = h
	}
	host = egress.NormHost(host)
	if r.den.record(host, msg) {
		r.logger.Warn("sandbox denied egress", "host", host, "target", target, "reason", msg)
	}
}

// dial connects to target through the policy; a refusal is recorded and
// returned as a *egress.DeniedError.
func (r *relay) dial(target string) (*idleConn, error) {
	ctx, cancel := context.WithTimeout(r.ctx, relayDialTimeout)
	defer cancel()
	c, err := r.pol.DialContext(ctx, "tcp", target)
	if err != nil {
		var d *egress.DeniedError
		if errors.As(err, &d) {
			r.deny(target, d.Error())
		}
		return nil, err
	}
	if !r.track(c) {
		c.Close()
		return nil, net.ErrClosed
	}
	return &idleConn{Conn: c, idle: r.idleTimeout}, nil
}

// forward relays one connection accepted on a transparent forward.
func (r *relay) forward(c *idleConn, f forward) {
	up, err := r.dial(f.target)
	if err != nil {
		return
	}
	defer r.untrack(up.Conn)
	r.pipe(c, up, nil)
}

// proxy serves one connection to the proxy: SOCKS5 when its first byte is
// 0x05, else HTTP/1.1.
func (r *relay) proxy(c *idleConn) {
	lr := &limitedReader{r: c, n: r.maxHeader}
	br := bufio.NewReader(lr)
	c.fixed = time.Now().Add(r.headerTimeout)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == 0x05 {
		r.socks(c, br)
		return
	}
	for {
		lr.n, c.fixed = r.maxHeader, time.Now().Add(r.headerTimeout)
		req, err := http.ReadRequest(br)
		if err != nil {
			switch {
			case lr.n <= 0:
				httpError(c, http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("request header larger than %d bytes", r.maxHeader))
			case errors.Is(err, io.EOF), isTimeout(err), errors.Is(err, net.ErrClosed):
			default:
				httpError(c, http.StatusBadRequest, "malformed request: "+err.Error())
			}
			return
		}
		lr.n, c.fixed = -1, time.Time{}
		if req.Method == http.MethodConnect {
			r.connect(c, br, req)
			return
		}
		if !r.absolute(c, br, req) {
			return
		}
	}
}

// connect serves a CONNECT request: a tunnel to req.Host.
func (r *relay) connect(c *idleConn, br *bufio.Reader, req *http.Request) {
	if _, _, err := net.SplitHostPort(req.Host); err != nil {
		httpError(c, http.StatusBadRequest, fmt.Sprintf("CONNECT %q: want host:port", req.Host))
		return
	}
	up, err := r.dial(req.Host)
	if err != nil {
		dialError(c, req.Host, err)
		return
	}
	defer r.untrack(up.Conn)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	r.pipe(c, up, br)
}

// hopByHop are the fields a proxy does not forward (RFC 9110 section
// 7.6.1), besides those Connection names.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, f := range hopByHop {
		h.Del(f)
	}
}

// absolute serves an absolute-form request (GET http://host/path) on its
// own upstream connection; it reports whether the client connection may
// carry another request.
func (r *relay) absolute(c *idleConn, br *bufio.Reader, req *http.Request) bool {
	if !req.URL.IsAbs() || req.URL.Host == "" {
		httpError(c, http.StatusBadRequest, "this is toolhost's egress proxy: send CONNECT host:port or an absolute-form request (GET http://host/path)")
		return false
	}
	if req.URL.Scheme != "http" {
		httpError(c, http.StatusBadRequest, fmt.Sprintf("scheme %q: use CONNECT for https", req.URL.Scheme))
		return false
	}
	if err := r.pol.CheckURL(req.URL); err != nil {
		r.deny(net.JoinHostPort(req.URL.Hostname(), egress.URLPort(req.URL)), err.Error())
		httpError(c, http.StatusForbidden, err.Error())
		return false
	}
	target := net.JoinHostPort(req.URL.Hostname(), egress.URLPort(req.URL))
	up, err := r.dial(target)
	if err != nil {
		dialError(c, target, err)
		return false
	}
	defer r.untrack(up.Conn)
	clientClose := req.Close
	removeHopByHop(req.Header)
	req.Header.Del("Expect") // no 100 Continue to relay: the body follows at once
	req.Close = true         // one upstream connection per request
	if err := req.Write(up); err != nil {
		httpError(c, http.StatusBadGateway, fmt.Sprintf("sending the request to %s: %v", target, err))
		return false
	}
	resp, err := http.ReadResponse(bufio.NewReader(up), req)
	if err != nil {
		httpError(c, http.StatusBadGateway, fmt.Sprintf("reading the response of %s: %v", target, err))
		return false
	}
	defer resp.Body.Close()
	removeHopByHop(resp.Header)
	// Keep the client's connection only when the body's end is marked (a
	// length or chunks): else the body ends when the connection does.
	chunked := len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
	resp.Close = clientClose || !resp.ProtoAtLeast(1, 1) || (resp.ContentLength < 0 && !chunked)
	if err := resp.Write(c); err != nil {
		return false
	}
	return !resp.Close
}

// httpError answers msg with status and closes the exchange
// (Connection: close).
func httpError(w io.Writer, status int, msg string) {
	body := "toolhost sandbox: " + msg + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

// dialError answers a failed dial of target: 403 for a refusal, 504 for a
// timeout, else 502.
func dialError(w io.Writer, target string, err error) {
	var d *egress.DeniedError
	switch {
	case errors.As(err, &d):
		httpError(w, http.StatusForbidden, d.Error())
	case isTimeout(err):
		httpError(w, http.StatusGatewayTimeout, fmt.Sprintf("connecting to %s: %v", target, err))
	default:
		httpError(w, http.StatusBadGateway, fmt.Sprintf("connecting to %s: %v", target, err))
	}
}

// SOCKS5 (RFC 1928) constants.
const (
	socksVersion   = 0x05
	socksNoAuth    = 0x00
	socksNoMethod  = 0xff
	socksConnect   = 0x01
	socksIPv4      = 0x01
	socksDomain    = 0x03
	socksIPv6      = 0x04
	socksSucceeded = 0x00
	socksFailure   = 0x01
	socksNotAllow  = 0x02
	socksNetUnr    = 0x03
	socksHostUnr   = 0x04
	socksRefused   = 0x05
	socksTTLExp    = 0x06
	socksBadCmd    = 0x07
	socksBadAtyp   = 0x08
)

// socks serves a SOCKS5 handshake and CONNECT request, then the tunnel.
func (r *relay) socks(c *idleConn, br *bufio.Reader) {
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return
	}
	if !strings.ContainsRune(string(methods), socksNoAuth) {
		c.Write([]byte{socksVersion, socksNoMethod})
		return
	}
	if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return
	}
	var req [4]byte // VER CMD RSV ATYP
	if _, err := io.ReadFull(br, req[:]); err != nil || req[0] != socksVersion {
		return
	}
	var host string
	switch req[3] {
	case socksIPv4, socksIPv6:
		b := make([]byte, 4)
		if req[3] == socksIPv6 {
			b = make([]byte, 16)
		}
		if _, err := io.ReadFull(br, b); err != nil {
			return
		}
		a, _ := netip.AddrFromSlice(b)
		host = a.String()
	case socksDomain:
		n, err := br.ReadByte()
		if err != nil {
			return
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return
		}
		host = string(b)
	default:
		socksReply(c, socksBadAtyp)
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return
	}
	if req[1] != socksConnect {
		socksReply(c, socksBadCmd)
		return
	}
	target := net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(pb[:]))))
	c.fixed = time.Time{}
	up, err := r.dial(target)
	if err != nil {
		var d *egress.DeniedError
		var se syscall.Errno
		switch {
		case errors.As(err, &d):
			socksReply(c, socksNotAllow)
		case isTimeout(err):
			socksReply(c, socksTTLExp)
		case errors.As(err, &se) && se == syscall.ECONNREFUSED:
			socksReply(c, socksRefused)
		case errors.As(err, &se) && se == syscall.ENETUNREACH:
			socksReply(c, socksNetUnr)
		case errors.As(err, new(*net.DNSError)), errors.As(err, &se) && se == syscall.EHOSTUNREACH:
			socksReply(c, socksHostUnr)
		default:
			socksReply(c, socksFailure)
		}
		return
	}
	defer r.untrack(up.Conn)
	if err := socksReply(c, socksSucceeded); err != nil {
		return
	}
	r.pipe(c, up, br)
}

// socksReply writes a reply with code rep and BND.ADDR 0.0.0.0:0.
func socksReply(w io.Writer, rep byte) error {
	_, err := w.Write([]byte{socksVersion, rep, 0, socksIPv4, 0, 0, 0, 0, 0, 0})
	return err
}

// pipe copies bytes both ways between c and up until both directions end
// (a direction's EOF half-closes the other side) or neither has carried a
// byte for the idle timeout. buffered, when not nil, holds bytes read from
// c ahead of the tunnel (a client that did not wait for the reply).
func (r *relay) pipe(c, up *idleConn, buffered *bufio.Reader) {
	act := new(atomic.Int64)
	act.Store(time.Now().UnixNano())
	c.act, up.act, c.fixed = act, act, time.Time{}
	if buffered != nil {
		if n := buffered.Buffered(); n > 0 {
			b, _ := buffered.Peek(n)
			if _, err := up.Write(b); err != nil {
				return
			}
		}
	}
	done := make(chan struct{})
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(done)
		io.Copy(up, c)
		closeWrite(up.Conn)
	}()
	io.Copy(c, up)
	closeWrite(c.Conn)
	select {
	case <-done:
	case <-r.ctx.Done():
	}
	// Unblock the other direction when it is still waiting (the relay is
	// closing, or the client never half-closes): both sides are done.
	c.Conn.Close()
	up.Conn.Close()
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// idleConn is a net.Conn whose reads and writes time out: before a fixed
// deadline when one is set (a request header), else after the idle
// timeout without a byte in either direction of its pipe (act, shared
// with the other side; nil: this connection's own traffic).
type idleConn struct {
	net.Conn
	idle  time.Duration
	fixed time.Time
	act   *atomic.Int64
}

func (c *idleConn) touch() {
	if c.act != nil {
		c.act.Store(time.Now().UnixNano())
	}
}

func (c *idleConn) Read(b []byte) (int, error) {
	for {
		dl := c.fixed
		if dl.IsZero() {
			dl = time.Now().Add(c.idle)
		}
		c.Conn.SetReadDeadline(dl)
		n, err := c.Conn.Read(b)
		if n > 0 {
			c.touch()
		}
		if err != nil && n == 0 && c.fixed.IsZero() && c.act != nil && isTimeout(err) &&
			time.Since(time.Unix(0, c.act.Load())) < c.idle {
			continue // the other direction is active
		}
		return n, err
	}
}

func (c *idleConn) Write(b []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(c.idle))
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.touch()
	}
	return n, err
}

// limitedReader reads at most n bytes (n < 0: no limit) and then reports
// io.EOF, as io.LimitedReader, with n settable between requests.
type limitedReader struct {
	r io.Reader
	n int64
}

func (l *limitedReader) Read(b []byte) (int, error) {
	if l.n < 0 {
		return l.r.Read(b)
	}
	if l.n == 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > l.n {
		b = b[:l.n]
	}
	n, err := l.r.Read(b)
	l.n -= int64(n)
	return n, err
}

// receiveListeners receives the n listening sockets the child sends on
// sock (one SCM_RIGHTS message, in Config.Listen order) and wraps them as
// net.Listeners; the received descriptors are closed once wrapped
// (net.FileListener duplicates them). sock is left open. n == 0 reads
// nothing. It blocks until the child sends or closes its end of sock (the
// parent must have closed its copy of the child's end). Errors wrap ErrSetup: the child closed sock without sending
// (its setup failed: see the status pipe), or sent another number of
// descriptors.
func receiveListeners(sock *os.File, n int) ([]net.Listener, error) {
	if n == 0 {
		return nil, nil
	}
	fc, err := net.FileConn(sock)
	if err != nil {
		return nil, fmt.Errorf("%w: receiving the egress listeners: %v", ErrSetup, err)
	}
	defer fc.Close()
	uc, ok := fc.(*net.UnixConn)
	if !ok {
		return nil, fmt.Errorf("%w: receiving the egress listeners: not a Unix socket", ErrSetup)
	}
	buf := make([]byte, 16)
	oob := make([]byte, syscall.CmsgSpace(4*n))
	_, oobn, flags, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("%w: receiving the egress listeners: %v", ErrSetup, err)
	}
	var fds []int
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err == nil {
		for _, m := range msgs {
			got, err := syscall.ParseUnixRights(&m)
			if err == nil {
				fds = append(fds, got...)
			}
		}
	}
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), "egress listener")
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if len(fds) != n || flags&syscall.MSG_CTRUNC != 0 {
		return nil, fmt.Errorf("%w: receiving the egress listeners: got %d descriptors, want %d (the sandbox's child closed the socket or failed to bind)", ErrSetup, len(fds), n)
	}
	lns := make([]net.Listener, 0, n)
	for _, f := range files {
		ln, err := net.FileListener(f)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("%w: receiving the egress listeners: %v", ErrSetup, err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}
