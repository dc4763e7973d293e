package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/gateway"
)

// answerWait bounds the wait for an answer the gateway owes at once (it
// needs no body and no backend): generous for -race on a busy machine, and
// far below any timeout the tests configure, so an answer that arrives
// only because a timeout fired fails the test.
const answerWait = time.Minute

// serveBase serves f's gateway with Serve on a loopback listener until the
// test ends and returns its address, host:port.
func serveBase(t *testing.T, f *fixture) string {
	t.Helper()
	return strings.TrimSuffix(strings.TrimPrefix(serveLoopback(t, f), "http://"), "/mcp")
}

// dialFrom opens a TCP connection to addr from the loopback address from
// (127.0.0.1, 127.0.0.2, ...: every 127/8 address is on lo, so each is a
// distinct peer to the gateway); the connection is closed with the test.
func dialFrom(t testing.TB, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: answerWait}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, from, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// withheldBody writes a request's headers announcing a body of length
// bytes (-1: chunked), and the first 10 bytes of it, and withholds the
// rest.
func withheldBody(c net.Conn, method, path, host, auth string, length int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n", method, path, host)
	if auth != "" {
		fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", auth)
	}
	if length < 0 { // a chunked body, its first chunk sent
		b.WriteString("Transfer-Encoding: chunked\r\n\r\na\r\n{\"jsonrpc\"\r\n")
	} else {
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n{\"jsonrpc\"", length)
	}
	_, err := io.WriteString(c, b.String())
	return err
}

// answer reads one response from c, waiting at most answerWait, and then
// checks that the gateway closes the connection (EOF, not the deadline).
func answer(c net.Conn, method string) (status int, closed bool, err error) {
	c.SetReadDeadline(time.Now().Add(answerWait))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		return 0, false, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_, err = br.ReadByte()
	return resp.StatusCode, err == io.EOF || isReset(err), nil
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// TestWithheldBodyRefusedAtOnce (issue 21, item 3): 200 peers send complete
// headers with no token or a wrong one, announce a body of up to 256 KiB
// and withhold it. Every one is answered 401 without the gateway waiting
// for the body, and its connection is closed. A request refused for
// another reason before its body is read (foreign Host, unknown path,
// method not allowed, body over max_body) is answered and closed the same
// way.
func TestWithheldBodyRefusedAtOnce(t *testing.T) {
	// 200 peers on one address: the per-peer limit is raised so that
	// every one reaches the handler; read_timeout is far beyond the
	// wait, so an answer cannot come from it.
	f := start(t, testConfig+"\n[serve]\nmax_connections_per_peer = 1024\nread_timeout = \"10m\"\n")
	addr := serveBase(t, f)

	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := ""
			if i%2 == 1 {
				tok = "wrong-token-0123456789"
			}
			length := 1000 + i*(256<<10-1000)/n // up to 256 KiB, what net/http drains
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			if err := withheldBody(c, "POST", "/mcp", addr, tok, length); err != nil {
				errs <- err
				return
			}
			status, closed, err := answer(c, "POST")
			switch {
			case err != nil:
				errs <- fmt.Errorf("peer %d (token %q, body %d bytes): no answer: %v", i, tok, length, err)
			case status != http.StatusUnauthorized || !closed:
				errs <- fmt.Errorf("peer %d: status %d, closed %v; want 401 and closed", i, status, closed)
			}
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed++; failed <= 5 {
			t.Error(err)
		}
	}
	if failed > 5 {
		t.Errorf("... and %d more", failed-5)
	}

	for _, tc := range []struct {
		method, path, host, auth string
		length                   int
		want                     int
	}{
		{"POST", "/mcp", "evil.example.com", "bob-token-0123456789ab", 1000, http.StatusForbidden},
		{"POST", "/mcp", addr, "wrong-token-0123456789", -1, http.StatusUnauthorized},
		{"POST", "/nope", addr, "", 1000, http.StatusNotFound},
		{"POST", "/healthz", addr, "", 1000, http.StatusMethodNotAllowed},
		{"POST", "/mcp", addr, "bob-token-0123456789ab", 8 << 20, http.StatusRequestEntityTooLarge},
	} {
		t.Run(fmt.Sprintf("%s_%s_%d_length=%d", tc.method, tc.path, tc.want, tc.length), func(t *testing.T) {
			c := dialFrom(t, "127.0.0.1", addr)
			if err := withheldBody(c, tc.method, tc.path, tc.host, tc.auth, tc.length); err != nil {
				t.Fatal(err)
			}
			status, closed, err := answer(c, tc.method)
			if err != nil || status != tc.want || !closed {
				t.Errorf("status %d, closed %v, err %v; want %d and closed", status, closed, err, tc.want)
			}
		})
	}
}

// TestForeignHostRefusedEverywhere (issue 21, item 5): on a loopback
// listener every endpoint, not only /mcp, refuses a request whose Host is
// not loopback (a page that rebinds its name to 127.0.0.1) with 403, and
// answers the same request with a loopback Host.
func TestForeignHostRefusedEverywhere(t *testing.T) {
	f := start(t, testConfig)
	addr := serveBase(t, f)
	_, port, _ := net.SplitHostPort(addr)
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/mcp", "/nope"} {
		for _, host := range []string{"evil.example.com", "evil.example.com:" + port, "127.0.0.1.nip.io:" + port, addr, "localhost:" + port, "[::1]:" + port} {
			req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
			req.Host = host
			req.Header.Set("Accept", "text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			foreign := strings.Contains(host, "example") || strings.Contains(host, "nip.io")
			switch {
			case foreign && resp.StatusCode != http.StatusForbidden:
				t.Errorf("GET %s with Host %s: %d, want 403", path, host, resp.StatusCode)
			case !foreign && resp.StatusCode == http.StatusForbidden:
				t.Errorf("GET %s with Host %s: 403, want it served", path, host)
			}
		}
	}
}

// TestSlowBodyCutAtReadTimeout (issue 21, item 3): a client with a valid
// token that withholds its body, or never finishes its headers, has its
// connection cut once [serve] read_timeout has passed, and not before.
func TestSlowBodyCutAtReadTimeout(t *testing.T) {
	const readTimeout = time.Second
	f := start(t, testConfig+"\n[serve]\nread_timeout = \"1s\"\n")
	addr := serveBase(t, f)
	for _, how := range []string{"body", "headers"} {
		t.Run(how, func(t *testing.T) {
			// Before the dial: the server's read deadline starts when it
			// accepts, which may come before dialFrom returns here.
			t0 := time.Now()
			c := dialFrom(t, "127.0.0.1", addr)
			if how == "body" {
				if err := withheldBody(c, "POST", "/mcp", addr, "bob-token-0123456789ab", 1000); err != nil {
					t.Fatal(err)
				}
			} else {
				io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: Bearer bob-token-0123456789ab\r\n")
			}
			c.SetReadDeadline(time.Now().Add(answerWait))
			_, err := io.Copy(io.Discard, c) // any answer, then the close
			if err != nil && !isReset(err) {
				t.Fatalf("connection not cut: %v", err)
			}
			if d := time.Since(t0); d < readTimeout {
				t.Errorf("cut after %v, before read_timeout (%v)", d, readTimeout)
			}
		})
	}
	// read_timeout bounds reading the request, not the response: a call
	// that runs 3 times as long streams its result, and the session's GET
	// stream outlives it.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cs, err := connectHTTP(ctx, "http://"+addr+"/mcp", "bob-token-0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for range 2 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__sleep", Arguments: map[string]any{"ms": 3 * readTimeout.Milliseconds()}})
		if err != nil || res.IsError {
			t.Fatalf("a call longer than read_timeout: %+v, %v", res, err)
		}
	}
}

// TestMetricsToken (issue 21, item 5): with [serve] metrics_token, GET
// /metrics needs it as a bearer token; /healthz and /readyz stay open.
func TestMetricsToken(t *testing.T) {
	const tok = "metrics-token-0123456789"
	f := start(t, testConfig+"\n[serve]\nmetrics_token = \""+tok+"\"\n")
	addr := serveBase(t, f)
	for _, tc := range []struct {
		path, auth string
		want       int
	}{
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", "Bearer wrong-token-0123456789", http.StatusUnauthorized},
		{"/metrics", "Bearer bob-token-0123456789ab", http.StatusUnauthorized}, // a client's token is not the scraper's
		{"/metrics", "Basic " + tok, http.StatusUnauthorized},
		{"/metrics", "Bearer " + tok, http.StatusOK},
		{"/metrics", "bearer " + tok, http.StatusOK}, // RFC 9110 section 11.1: the scheme is case-insensitive
		{"/healthz", "", http.StatusOK},
		{"/readyz", "", http.StatusOK},
	} {
		req, _ := http.NewRequest("GET", "http://"+addr+tc.path, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s with %q: %d, want %d", tc.path, tc.auth, resp.StatusCode, tc.want)
		}
		if tc.want == http.StatusOK && tc.path == "/metrics" && !strings.Contains(string(body), "mcp_http_connections ") {
			t.Errorf("/metrics lacks mcp_http_connections:\n%.500s", body)
		}
		if resp.StatusCode == http.StatusUnauthorized && strings.Contains(string(body), tok) {
			t.Errorf("the 401 quotes the token: %s", body)
		}
	}
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// holdConn opens a connection from the loopback address from, makes one
// request on it and leaves it open and idle (until idle_timeout).
func holdConn(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	c := dialFrom(t, from, addr)
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(answerWait))
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "GET"})
	if err != nil {
		t.Fatalf("connection from %s within the limits: %v", from, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c
}

// refusedConn reports whether a connection from the loopback address from
// is closed without an answer to its request.
func refusedConn(t *testing.T, from, addr string) bool {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: answerWait}
	c, err := d.Dial("tcp", addr)
	if isReset(err) {
		return true // reset before connect returned
	} else if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n") // may fail: reset
	c.SetReadDeadline(time.Now().Add(answerWait))
	n, err := c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection from %s neither answered nor closed", from)
	}
	return n == 0
}

// clientFrom is a well-behaved HTTP client whose connections come from
// the loopback address from.
func clientFrom(t *testing.T, from string) *http.Client {
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: answerWait}
}

// TestConnectionLimits (issue 21, item 3): one peer cannot hold more than
// max_connections_per_peer connections nor all peers together more than
// max_connections; a connection over either is closed at once, counted in
// /metrics and logged at most once per interval, while a well-behaved
// client from another peer still gets through, and a freed slot is used
// again.
func TestConnectionLimits(t *testing.T) {
	logs := &syncBuffer{}
	f := startLogged(t, testConfig+"\n[serve]\nmax_connections = 6\nmax_connections_per_peer = 3\nidle_timeout = \"10m\"\n", logs)
	addr := serveBase(t, f)
	var held []net.Conn
	for range 3 {
		held = append(held, holdConn(t, "127.0.0.1", addr))
	}
	for i := range 50 {
		if !refusedConn(t, "127.0.0.1", addr) {
			t.Fatalf("connection %d from 127.0.0.1 over max_connections_per_peer = 3 was answered", 4+i)
		}
	}
	good := clientFrom(t, "127.0.0.2")
	get := func(c *http.Client) error {
		resp, err := c.Get("http://" + addr + "/healthz")
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body) // read to the end: the connection stays open
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	if err := get(good); err != nil {
		t.Fatalf("a well-behaved client from another peer: %v", err)
	}
	// Now 4 are open (3 held, 1 the good client's keep-alive): 2 more
	// reach max_connections.
	held = append(held, holdConn(t, "127.0.0.3", addr), holdConn(t, "127.0.0.3", addr))
	if !refusedConn(t, "127.0.0.4", addr) {
		t.Fatal("a connection over max_connections = 6 was answered")
	}
	if err := get(good); err != nil {
		t.Fatalf("the well-behaved client on its open connection: %v", err)
	}
	held[0].Close()
	late := clientFrom(t, "127.0.0.4")
	eventually(t, "a connection to be accepted after one closed", func() bool { return get(late) == nil })

	rec := httptest.NewRecorder()
	f.m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`mcp_http_connections_refused_total{limit="max_connections_per_peer"} 50`, `mcp_http_connections_refused_total{limit="max_connections"}`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if n := strings.Count(logs.String(), "over a [serve] limit"); n < 1 || n > 3 {
		t.Errorf("%d log lines about refused connections after 51+ refusals, want 1 (at most one per 10s):\n%s", n, logs.String())
	}
}

// startLogged is start with the gateway's log written to logs.
func startLogged(t *testing.T, src string, logs io.Writer) *fixture {
	t.Helper()
	f := start(t, src)
	f.g.Close()
	g, err := gateway.New(f.h, &gateway.Options{Logger: hclog.New(&hclog.LoggerOptions{Name: "gw", Output: logs, Level: hclog.Info}), Version: "test", Metrics: f.m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	f.g = g
	return f
}
