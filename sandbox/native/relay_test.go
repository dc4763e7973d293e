//go:build linux

package native

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/sandbox/egress"
	"go.uber.org/goleak"
)

// testRelay is a relay serving on stand-in listeners of the host's
// loopback (the relay does not care where its listeners are bound).
type testRelay struct {
	*relay
	log   *testutil.Buffer
	den   *denials
	proxy string            // the proxy listener's address
	fwd   map[string]string // forward's listen address → stand-in address
}

func startRelay(t *testing.T, hosts []string, tune func(*relay)) *testRelay {
	t.Helper()
	tr := &testRelay{log: &testutil.Buffer{}, den: &denials{}, fwd: map[string]string{}}
	logger := hclog.New(&hclog.LoggerOptions{Output: tr.log, Level: hclog.Warn})
	r, err := newRelay(hosts, logger, tr.den)
	if err != nil {
		t.Fatal(err)
	}
	if tune != nil {
		tune(r)
	}
	tr.relay = r
	var lns []net.Listener
	for i, a := range r.listen() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			tr.proxy = ln.Addr().String()
		} else {
			tr.fwd[a] = ln.Addr().String()
		}
		lns = append(lns, ln)
	}
	r.serve(lns)
	t.Cleanup(r.close)
	return tr
}

// warnings counts the "sandbox denied egress" lines logged for host.
func (tr *testRelay) warnings(host string) int {
	n := 0
	for _, l := range strings.Split(tr.log.String(), "\n") {
		if strings.Contains(l, "sandbox denied egress") && strings.Contains(l, "host="+host+" ") {
			n++
		}
	}
	return n
}

func hostPort(t *testing.T, u string) (string, string) {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return pu.Host, pu.Port()
}

func TestRelayPlan(t *testing.T) {
	r, err := newRelay([]string{
		"registry.npmjs.org", "api.github.com:443", "*.x.com", "127.0.0.1:8081", "[::1]:8082",
		"10.0.0.1:80", "127.0.0.2", "127.0.0.1:3128", "localhost:9000", "Registry.npmjs.org:8443",
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	want := []string{
		ProxyAddr,
		"127.77.0.1:80", "127.77.0.1:443",
		"127.77.0.2:443",
		"127.0.0.1:8081", "[::1]:8082",
		"127.0.0.1:9000",
		"127.77.0.1:8443",
	}
	if got := r.listen(); !reflect.DeepEqual(got, want) {
		t.Errorf("listen:\n got %q\nwant %q", got, want)
	}
	if got := r.fwds[0].target; got != "registry.npmjs.org:80" {
		t.Errorf("first forward's target %q", got)
	}
	files := r.files()
	if got, want := files["/etc/hosts"], "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.77.0.1\tregistry.npmjs.org\n127.77.0.2\tapi.github.com\n"; got != want {
		t.Errorf("/etc/hosts:\n%s\nwant\n%s", got, want)
	}
	if !strings.HasPrefix(files["/etc/resolv.conf"], "nameserver 127.0.0.1\n") {
		t.Errorf("/etc/resolv.conf: %q", files["/etc/resolv.conf"])
	}
	env := strings.Join(r.env(), " ")
	for _, v := range []string{"HTTP_PROXY=http://" + ProxyAddr, "https_proxy=http://" + ProxyAddr, "ALL_PROXY=socks5h://" + ProxyAddr, "NO_PROXY=localhost,127.0.0.1,::1", "NODE_USE_ENV_PROXY=1"} {
		if !strings.Contains(env, v) {
			t.Errorf("env lacks %s: %s", v, env)
		}
	}

	none, err := newRelay(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer none.close()
	if none.listen() != nil || none.env() != nil || none.files()["/etc/hosts"] == "" {
		t.Errorf("no hosts: listen %q env %q files %q", none.listen(), none.env(), none.files())
	}

	_, err = newRelay([]string{"a.com:99999"}, nil, nil)
	if !errors.Is(err, ErrSpec) || !errors.Is(err, egress.ErrEntry) {
		t.Errorf("bad entry: %v, want ErrSpec and egress.ErrEntry", err)
	}
}

// TestRelayProxyHTTP: Go's http.Client through the HTTP proxy (absolute
// form and CONNECT) and its SOCKS5 proxy reaches an allowed loopback
// server by its literal entry, and is refused a port not listed, a name
// that a glob allows but resolves to loopback, the cloud metadata address
// and a redirect to a host not listed; refusals are counted and each host
// logged once.
func TestRelayProxyHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect-out":
			http.Redirect(w, r, "http://denied.example/", http.StatusFound)
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %s conn=%q proxy-auth=%q", r.Method, b, r.Header.Get("Connection"), r.Header.Get("Proxy-Authorization"))
		default:
			fmt.Fprint(w, "ok")
		}
	}))
	defer srv.Close()
	tsrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "tls ok") }))
	defer tsrv.Close()
	host, port := hostPort(t, srv.URL)
	tlsHost, _ := hostPort(t, tsrv.URL)
	tr := startRelay(t, []string{host, tlsHost, "local*:" + port, "169.254.*"}, nil)

	for _, scheme := range []string{"http", "socks5"} {
		t.Run(scheme, func(t *testing.T) {
			before := tr.den.snapshot().Count
			proxy, _ := url.Parse(scheme + "://" + tr.proxy)
			tt := tsrv.Client().Transport.(*http.Transport).Clone()
			tt.Proxy = http.ProxyURL(proxy)
			c := &http.Client{Transport: tt, Timeout: time.Minute}
			defer tt.CloseIdleConnections()
			get := func(u string) (int, string, error) {
				resp, err := c.Get(u)
				if err != nil {
					return 0, "", err
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b), nil
			}
			for _, u := range []string{srv.URL + "/ok", tsrv.URL + "/"} {
				code, body, err := get(u)
				if err != nil || code != 200 || !strings.HasSuffix(body, "ok") {
					t.Errorf("GET %s: %d %q %v, want 200", u, code, body, err)
				}
			}
			if scheme == "http" {
				resp, err := c.Post(srv.URL+"/echo", "text/plain", strings.NewReader("body"))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != `POST body conn="close" proxy-auth=""` {
					t.Errorf("POST through the proxy: %q", b)
				}
			}
			denied := []struct{ url, msg string }{
				{"http://" + host[:strings.LastIndex(host, ":")] + ":1/", "not in allowed_hosts"},
				{"http://localhost:" + port + "/ok", "loopback"},
				{"http://169.254.169.254/latest/meta-data/", "cloud metadata"},
				{srv.URL + "/redirect-out", "denied.example"},
			}
			for _, d := range denied {
				code, body, err := get(d.url)
				switch scheme {
				case "http":
					if err != nil || code != http.StatusForbidden || !strings.Contains(body, d.msg) || !strings.Contains(body, "allowed_hosts") {
						t.Errorf("GET %s: %d %q %v, want 403 with %q", d.url, code, body, err, d.msg)
					}
				case "socks5":
					if err == nil || !strings.Contains(err.Error(), "not allowed by ruleset") {
						t.Errorf("GET %s: %d %q %v, want a SOCKS5 refusal (not allowed by ruleset)", d.url, code, body, err)
					}
				}
			}
			// HTTPS to a port not listed: CONNECT refused.
			_, _, err := get("https://" + host[:strings.LastIndex(host, ":")] + ":2/")
			if err == nil {
				t.Error("https to an unlisted port went through")
			}
			if got := tr.den.snapshot().Count - before; got != int64(len(denied)+1) {
				t.Errorf("%d denials counted, want %d", got, len(denied)+1)
			}
		})
	}
	for _, h := range []string{"127.0.0.1", "localhost", "169.254.169.254", "denied.example"} {
		if n := tr.warnings(h); n != 1 {
			t.Errorf("host %s logged %d times, want once:\n%s", h, n, tr.log)
		}
	}
	if d := tr.den.snapshot(); d.LastAt.IsZero() || d.Last == "" {
		t.Errorf("denials: %+v", d)
	}
}

// TestRelayProxyKeepAlive: a client connection carries several
// absolute-form requests when each response's end is marked, and is closed
// after a response whose body ends with the upstream connection.
func TestRelayProxyKeepAlive(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/raw" {
			fmt.Fprint(w, "sized")
			return
		}
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close")
		c.Close()
	}))
	defer srv.Close()
	host, _ := hostPort(t, srv.URL)
	// The header timeout must not be what ends the connection.
	tr := startRelay(t, []string{host}, func(r *relay) { r.headerTimeout = time.Hour })
	c, err := net.Dial("tcp", tr.proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	br := bufio.NewReader(c)
	for _, path := range []string{"/a", "/b", "/raw"} {
		fmt.Fprintf(c, "GET %s%s HTTP/1.1\r\nHost: %s\r\n\r\n", srv.URL, path, host)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("GET %s on the kept connection: %v", path, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := "sized"
		if path == "/raw" {
			want = "until close"
		}
		if err != nil || string(b) != want || resp.Close != (path == "/raw") {
			t.Errorf("GET %s: %q %v close=%v", path, b, err, resp.Close)
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after a body delimited by close: %v, want EOF", err)
	}
}

// TestRelayCurl: curl, through the HTTP proxy (absolute form and CONNECT)
// and SOCKS5 with names resolved by the proxy.
func TestRelayCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	tsrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "tls ok") }))
	defer tsrv.Close()
	host, port := hostPort(t, srv.URL)
	tlsHost, _ := hostPort(t, tsrv.URL)
	tr := startRelay(t, []string{host, tlsHost, "local*:" + port}, nil)
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, curl, append([]string{"-sS", "--noproxy", "", "--max-time", "30"}, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, tc := range []struct {
		args []string
		ok   bool
		want string
	}{
		{[]string{"--proxy", "http://" + tr.proxy, srv.URL + "/"}, true, "ok"},
		{[]string{"--proxy", "http://" + tr.proxy, "-k", tsrv.URL + "/"}, true, "tls ok"},
		{[]string{"--socks5-hostname", tr.proxy, srv.URL + "/"}, true, "ok"},
		{[]string{"--socks5-hostname", tr.proxy, "-k", tsrv.URL + "/"}, true, "tls ok"},
		{[]string{"--proxy", "http://" + tr.proxy, "http://localhost:" + port + "/"}, true, "loopback"}, // a 403 page
		{[]string{"--proxy", "http://" + tr.proxy, "-k", "https://localhost:" + port + "/"}, false, "403"},
		{[]string{"--socks5-hostname", tr.proxy, "http://localhost:" + port + "/"}, false, "(2)"}, // reply 0x02: not allowed by ruleset
		{[]string{"--socks5-hostname", tr.proxy, "http://127.0.0.1:1/"}, false, "(2)"},
	} {
		out, err := run(tc.args...)
		if (err == nil) != tc.ok || !strings.Contains(out, tc.want) {
			t.Errorf("curl %q: %v, %q; want ok=%v with %q", tc.args, err, out, tc.ok, tc.want)
		}
	}
	if n := tr.warnings("localhost"); n != 1 {
		t.Errorf("localhost logged %d times, want once:\n%s", n, tr.log)
	}
}

// echoServer echoes every connection's bytes until Close, which waits for
// its goroutines.
type echoServer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func newEchoServer(t *testing.T) *echoServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.conns = append(e.conns, c)
			e.mu.Unlock()
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				io.Copy(c, c)
				c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	t.Cleanup(e.Close)
	return e
}

func (e *echoServer) Close() {
	e.ln.Close()
	e.mu.Lock()
	for _, c := range e.conns {
		c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// TestRelayForwardAndClose: a transparent forward relays bytes both ways
// (and a half-close); close ends live forwards and tunnels and leaves no
// goroutine.
func TestRelayForwardAndClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	echo := newEchoServer(t)
	_, port, _ := net.SplitHostPort(echo.ln.Addr().String())
	tr := startRelay(t, []string{"127.0.0.1:" + port, "localhost:" + port}, nil)

	if len(tr.fwd) != 1 {
		t.Fatalf("forwards %v, want one (localhost:%s takes 127.0.0.1:%s, already taken)", tr.fwd, port, port)
	}
	for listen, addr := range tr.fwd {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		msg := strings.Repeat("forwarded both ways ", 10000)
		go func() { io.WriteString(c, msg); c.(*net.TCPConn).CloseWrite() }()
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil || string(got) != msg {
			t.Fatalf("forward %s: %d bytes back, %v; want %d", listen, len(got), err, len(msg))
		}
	}

	// Live connections: a forward and a CONNECT tunnel, mid-stream.
	live := []net.Conn{}
	c, err := net.Dial("tcp", tr.fwd["127.0.0.1:"+port])
	if err != nil {
		t.Fatal(err)
	}
	live = append(live, c)
	p, err := net.Dial("tcp", tr.proxy)
	if err != nil {
		t.Fatal(err)
	}
	live = append(live, p)
	fmt.Fprintf(p, "CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n", port, port)
	br := bufio.NewReader(p)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	for _, c := range []io.ReadWriter{c, struct {
		io.Reader
		io.Writer
	}{br, p}} {
		io.WriteString(c, "ping")
		b := make([]byte, 4)
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "ping" {
			t.Fatalf("live connection: %q %v", b, err)
		}
	}
	tr.close()
	for _, c := range live {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		if _, err := io.ReadAll(c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("after close: %v, want EOF", err)
		}
		c.Close()
	}
	if _, err := net.Dial("tcp", tr.proxy); err == nil {
		t.Error("the proxy still accepts after close")
	}
	echo.Close()
}

// TestRelayForwardName: a name entry's forward dials the name through the
// policy (a literal entry: its loopback address is allowed), and a
// glob entry gets no forward.
func TestRelayForwardName(t *testing.T) {
	echo := newEchoServer(t)
	_, port, _ := net.SplitHostPort(echo.ln.Addr().String())
	tr := startRelay(t, []string{"localhost:" + port, "*.localhost:" + port}, nil)
	addr, ok := tr.fwd["127.0.0.1:"+port]
	if !ok || len(tr.fwd) != 1 || tr.fwds[0].target != "localhost:"+port {
		t.Fatalf("forwards %v %v, want 127.0.0.1:%s → localhost:%s only", tr.fwd, tr.fwds, port, port)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "name")
	b := make([]byte, 4)
	c.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "name" {
		t.Fatalf("through the name's forward: %q %v", b, err)
	}
}

// TestRelayBounds: an endless header is cut at the header limit, a silent
// client at the header timeout, and 1000 connections at once get no more
// than the relay's connection limit served; the relay still serves after.
func TestRelayBounds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	host, _ := hostPort(t, srv.URL)

	t.Run("endless header", func(t *testing.T) {
		tr := startRelay(t, []string{host}, func(r *relay) { r.maxHeader = 8 << 10 })
		c, err := net.Dial("tcp", tr.proxy)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		written := make(chan int64, 1)
		go func() {
			var n int64
			w, _ := io.WriteString(c, "GET "+srv.URL+"/ HTTP/1.1\r\nX-Endless: ")
			n += int64(w)
			chunk := strings.Repeat("a", 4096)
			for n < 64<<20 {
				w, err := io.WriteString(c, chunk)
				n += int64(w)
				if err != nil {
					break
				}
			}
			written <- n
		}()
		c.SetReadDeadline(time.Now().Add(time.Minute))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil && resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("endless header: %s, want 431", resp.Status)
		}
		c.Close()
		if n := <-written; n >= 64<<20 {
			t.Errorf("the relay read a %d-byte header", n)
		}
	})

	t.Run("silent client", func(t *testing.T) {
		tr := startRelay(t, []string{host}, func(r *relay) { r.headerTimeout = 500 * time.Millisecond })
		c, err := net.Dial("tcp", tr.proxy)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(time.Minute))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("silent client: %v, want EOF after the header timeout", err)
		}
	})

	t.Run("1000 connections", func(t *testing.T) {
		base := runtime.NumGoroutine()
		tr := startRelay(t, []string{host}, nil) // the default bounds
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for range 1000 {
			c, err := net.Dial("tcp", tr.proxy)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		testutil.Eventually(t, time.Minute, func() bool { return tr.active.Load() >= relayMaxConns },
			func() string { return fmt.Sprintf("%d connections served", tr.active.Load()) })
		if g := runtime.NumGoroutine() - base; g > relayMaxConns+16 {
			t.Errorf("%d goroutines for 1000 connections, want at most %d", g, relayMaxConns+16)
		}
		if n := tr.active.Load(); n != relayMaxConns {
			t.Errorf("%d connections served at once, want %d", n, relayMaxConns)
		}
		for _, c := range conns {
			c.Close()
		}
		conns = nil
		testutil.Eventually(t, time.Minute, func() bool { return tr.active.Load() == 0 },
			func() string { return fmt.Sprintf("%d connections still served", tr.active.Load()) })
		proxy, _ := url.Parse("http://" + tr.proxy)
		tt := &http.Transport{Proxy: http.ProxyURL(proxy)}
		defer tt.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tt}).Get(srv.URL + "/")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("after the flood: %v %v", resp, err)
		}
		resp.Body.Close()
	})
}

// TestReceiveListeners: listening sockets sent over a Unix socket in one
// SCM_RIGHTS message come back as listeners that accept; a wrong count or
// a closed socket is ErrSetup; no descriptor leaks.
func TestReceiveListeners(t *testing.T) {
	pair := func() (*os.File, *os.File) {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		return os.NewFile(uintptr(fds[0]), "parent"), os.NewFile(uintptr(fds[1]), "child")
	}
	// openFDs counts the descriptors open on the sockets sent (by their
	// socket:[inode] link), not every descriptor of the process: another
	// test's leftovers (a child's pipes, an idle connection) may close or
	// open one meanwhile, which made a count of all of them flaky (one
	// fewer after than before, in a CI run).
	var socks []string
	openFDs := func() int {
		ents, _ := os.ReadDir("/proc/self/fd")
		n := 0
		for _, e := range ents {
			if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && slices.Contains(socks, l) {
				n++
			}
		}
		return n
	}
	var addrs []string
	var fds []int
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		f, _ := ln.(*net.TCPListener).File()
		ln.Close() // the socket lives on in f
		defer f.Close()
		addrs = append(addrs, ln.Addr().String())
		fds = append(fds, int(f.Fd()))
		l, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		socks = append(socks, l)
	}
	before := openFDs()
	if before != len(fds) {
		t.Fatalf("%d descriptors on the sockets to send, want %d", before, len(fds))
	}
	parent, child := pair()
	if err := syscall.Sendmsg(int(child.Fd()), []byte{0}, syscall.UnixRights(fds...), nil, 0); err != nil {
		t.Fatal(err)
	}
	child.Close()
	lns, err := receiveListeners(parent, 2)
	parent.Close()
	if err != nil {
		t.Fatal(err)
	}
	for i, ln := range lns {
		c, err := net.Dial("tcp", addrs[i])
		if err != nil {
			t.Fatal(err)
		}
		a, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		a.Close()
		c.Close()
		ln.Close()
	}
	if after := openFDs(); after != before {
		t.Errorf("%d descriptors open on the sent sockets, %d before: the received ones leaked", after, before)
	}

	parent, child = pair()
	syscall.Sendmsg(int(child.Fd()), []byte{0}, syscall.UnixRights(fds[0]), nil, 0)
	child.Close()
	if _, err := receiveListeners(parent, 2); !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "got 1 descriptors, want 2") {
		t.Errorf("one sent, two wanted: %v", err)
	}
	parent.Close()

	parent, child = pair()
	child.Close()
	if _, err := receiveListeners(parent, 1); !errors.Is(err, ErrSetup) {
		t.Errorf("closed without sending: %v", err)
	}
	parent.Close()
	if after := openFDs(); after != before {
		t.Errorf("%d descriptors open on the sent sockets, %d before", after, before)
	}
}

// FuzzRelayProxy feeds the proxy (HTTP and SOCKS5 parsing) arbitrary
// bytes: it must neither panic nor hang, whatever the client sends.
func FuzzRelayProxy(f *testing.F) {
	for _, s := range []string{
		"GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://a.test/ HTTP/1.1\r\nConnection: keep-alive, X-A\r\nX-A: 1\r\n\r\nGET http://b/ HTTP/1.1\r\n\r\n",
		"POST http://127.0.0.1:1/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n",
		"CONNECT [::1 HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\n",
		"\x05\x01\x00\x05\x01\x00\x03\x09localhost\x00\x50",
		"\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x01",
		"\x05\x01\x00\x05\x02\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x01",
		"\x05\x00",
		"\x05\x02\x01\x02",
		"\x05\x01\x00\x05\x01\x00\x09",
	} {
		f.Add([]byte(s))
	}
	r, err := newRelay([]string{"127.0.0.1:1"}, nil, nil) // no name: no DNS lookup
	if err != nil {
		f.Fatal(err)
	}
	r.headerTimeout = 2 * time.Second
	defer r.close()
	f.Fuzz(func(t *testing.T, in []byte) {
		a, c := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.proxy(&idleConn{Conn: a, idle: 2 * time.Second})
			a.Close()
		}()
		go io.Copy(io.Discard, c)
		c.Write(in)
		c.Close()
		<-done
	})
}
