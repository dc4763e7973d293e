package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/gateway"
	"github.com/toolhost/toolhost/internal/testutil"
)

// dashConfig has a non-admin client (alice, profile review), a client
// that is not an admin (bob) and an admin (carol).
const dashConfig = testConfig + `
[serve.clients.carol]
token = "carol-token-0123456789"
admin = true
`

// carolToken is dashConfig's admin's (aliceToken and bobToken: hostile_test.go).
const carolToken = "carol-token-0123456789"

// base serves f on loopback and returns the listener's root URL.
func base(t *testing.T, f *fixture) string {
	t.Helper()
	return strings.TrimSuffix(serveLoopback(t, f), "/mcp")
}

// noRedirects is an HTTP client that reports redirects instead of
// following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func do(t *testing.T, c *http.Client, method, u string, body io.Reader, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func tokenCookie(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == gateway.TokenCookie {
			return c
		}
	}
	return nil
}

// TestDashboardLogin: with tokens configured, GET / without one is the
// login page; a wrong token is 401 and sets no cookie; the right one sets
// an HttpOnly, SameSite=Strict cookie and the page then names the client;
// a cross-origin login is refused; logout clears the cookie. Every
// dashboard response carries the CSP, nosniff and no-framing headers.
func TestDashboardLogin(t *testing.T) {
	f := start(t, dashConfig)
	u := base(t, f)
	form := func(tok string) io.Reader { return strings.NewReader(url.Values{"token": {tok}}.Encode()) }
	const formType = "application/x-www-form-urlencoded"

	resp, body := do(t, noRedirects, "GET", u+"/", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `action="/login"`) || strings.Contains(body, "Backends") {
		t.Fatalf("GET / without a token: %d\n%s", resp.StatusCode, body)
	}
	for k, want := range map[string]string{
		"Content-Security-Policy": "default-src 'self'",
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
	} {
		if got := resp.Header.Get(k); !strings.Contains(got, want) {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("CSP %q has no frame-ancestors 'none'", resp.Header.Get("Content-Security-Policy"))
	}

	resp, body = do(t, noRedirects, "POST", u+"/login", form("wrong-token"), "Content-Type", formType)
	if resp.StatusCode != 401 || tokenCookie(resp) != nil || !strings.Contains(body, "not valid") {
		t.Fatalf("wrong token: %d cookie %v\n%s", resp.StatusCode, tokenCookie(resp), body)
	}
	resp, _ = do(t, noRedirects, "GET", u+"/", nil, "Cookie", gateway.TokenCookie+"=wrong-token")
	if resp.StatusCode != 401 {
		t.Fatalf("GET / with a wrong cookie: %d, want 401", resp.StatusCode)
	}
	resp, _ = do(t, noRedirects, "POST", u+"/login", form(aliceToken), "Content-Type", formType, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	if resp.StatusCode != 403 || tokenCookie(resp) != nil {
		t.Fatalf("cross-origin login: %d cookie %v, want 403 and none", resp.StatusCode, tokenCookie(resp))
	}

	resp, _ = do(t, noRedirects, "POST", u+"/login", form(aliceToken), "Content-Type", formType)
	ck := tokenCookie(resp)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || ck == nil {
		t.Fatalf("login: %d Location %q cookie %v", resp.StatusCode, resp.Header.Get("Location"), ck)
	}
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.Secure || ck.Value != aliceToken {
		t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, not Secure over plain HTTP", ck)
	}
	resp, body = do(t, noRedirects, "GET", u+"/", nil, "Cookie", ck.String())
	if resp.StatusCode != 200 || !strings.Contains(body, "client <b>alice</b>") || !strings.Contains(body, "Sign out") {
		t.Fatalf("GET / with the cookie: %d\n%s", resp.StatusCode, body)
	}
	if strings.Contains(body, `data-action="restart"`) {
		t.Error("a client that is not an admin is shown the restart buttons")
	}
	resp, body = do(t, noRedirects, "GET", u+"/", nil, "Authorization", "Bearer "+carolToken)
	if resp.StatusCode != 200 || !strings.Contains(body, `data-action="restart"`) {
		t.Fatalf("GET / as an admin: %d, want the restart buttons\n%s", resp.StatusCode, body)
	}
	// The cookie works for the API too.
	resp, body = do(t, noRedirects, "GET", u+"/api/v1/audit", nil, "Cookie", ck.String())
	if resp.StatusCode != 200 {
		t.Fatalf("GET /api/v1/audit with the cookie: %d %s", resp.StatusCode, body)
	}

	resp, _ = do(t, noRedirects, "POST", u+"/logout", nil, "Cookie", ck.String())
	if c := tokenCookie(resp); resp.StatusCode != http.StatusSeeOther || c == nil || c.MaxAge >= 0 || c.Value != "" {
		t.Fatalf("logout: %d cookie %+v, want 303 and the cookie cleared", resp.StatusCode, c)
	}

	// Over TLS the cookie is Secure.
	tls := httptest.NewTLSServer(f.g.Handler())
	defer tls.Close()
	tc := tls.Client()
	tc.CheckRedirect = noRedirects.CheckRedirect
	resp, _ = do(t, tc, "POST", tls.URL+"/login", form(aliceToken), "Content-Type", formType)
	if c := tokenCookie(resp); c == nil || !c.Secure {
		t.Errorf("login over TLS: cookie %+v, want Secure", c)
	}

	resp, body = do(t, noRedirects, "GET", u+"/static/dashboard.js", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "EventSource") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("GET /static/dashboard.js: %d", resp.StatusCode)
	}
	if resp, _ := do(t, noRedirects, "GET", u+"/static/", nil); resp.StatusCode != 404 {
		t.Errorf("GET /static/ (a directory listing): %d, want 404", resp.StatusCode)
	}
}

// TestDashboardBadInput: the page and the audit endpoint refuse unknown
// and malformed query parameters with 400, a non-admin's look at another
// client's records with 403; a login body over 4 KiB is refused.
func TestDashboardBadInput(t *testing.T) {
	f := start(t, dashConfig)
	u := base(t, f)
	for _, tc := range []struct {
		path, token string
		code        int
		want        string
	}{
		{"/?nope=1", carolToken, 400, `unknown query parameter \"nope\"`},
		{"/?outcome=%3Cscript%3E", carolToken, 400, "unknown outcome"},
		{"/api/v1/audit?limit=0", carolToken, 400, "limit must be an integer from 1 to 1000"},
		{"/api/v1/audit?limit=1001", carolToken, 400, "limit must be"},
		{"/api/v1/audit?limit=x", carolToken, 400, "limit must be"},
		{"/api/v1/audit?tool=a&tool=b", carolToken, 400, "given 2 times"},
		{"/api/v1/audit?tool=" + strings.Repeat("a", 300), carolToken, 400, "longer than 256 bytes"},
		{"/api/v1/audit?outcome=nope", carolToken, 400, "unknown outcome"},
		{"/api/v1/audit?client=carol", aliceToken, 403, "only its own audit records"},
		{"/?client=carol", aliceToken, 403, "only its own audit records"},
		{"/api/v1/audit", "", 401, "unauthenticated"},
		{"/api/v1/events?x=1", carolToken, 400, "unknown query parameter"},
	} {
		var hdr []string
		if tc.token != "" {
			hdr = []string{"Authorization", "Bearer " + tc.token}
		}
		resp, body := do(t, noRedirects, "GET", u+tc.path, nil, hdr...)
		if resp.StatusCode != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("GET %.60s: %d %s, want %d with %q", tc.path, resp.StatusCode, body, tc.code, tc.want)
		}
	}
	big := strings.NewReader("token=" + strings.Repeat("a", 5<<10))
	resp, _ := do(t, noRedirects, "POST", u+"/login", big, "Content-Type", "application/x-www-form-urlencoded")
	if resp.StatusCode != 400 || tokenCookie(resp) != nil {
		t.Errorf("a 5 KiB login body: %d, want 400", resp.StatusCode)
	}
}

// TestAuditEndpoint: GET /api/v1/audit lists the ring newest first, by
// tool, client and outcome; a non-admin sees only its own client's
// records, an admin everyone's; huge arguments are not kept whole.
func TestAuditEndpoint(t *testing.T) {
	f := start(t, dashConfig)
	u := base(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	call := func(client, tool string, args any) {
		if _, err := f.h.CallTool(host.WithClient(ctx, client), tool, args); err != nil {
			t.Fatalf("%s %s: %v", client, tool, err)
		}
	}
	call("alice", "fx__echo", map[string]any{"text": "one"})
	call("bob", "fx__add", map[string]any{"a": 1, "b": 2})
	call("alice", "fx__echo", map[string]any{"text": strings.Repeat("x", 64<<10)})
	if _, err := f.h.CallTool(host.WithClient(ctx, "bob"), "fx__crash", nil); err == nil {
		t.Fatal("fx__crash is not denied") // by [policy]
	}

	get := func(q, tok string) []host.AuditRecord {
		t.Helper()
		resp, body := do(t, noRedirects, "GET", u+"/api/v1/audit"+q, nil, "Authorization", "Bearer "+tok)
		if resp.StatusCode != 200 {
			t.Fatalf("GET /api/v1/audit%s: %d %s", q, resp.StatusCode, body)
		}
		var out struct{ Records []host.AuditRecord }
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatal(err)
		}
		return out.Records
	}
	summary := func(recs []host.AuditRecord) string {
		var s []string
		for _, r := range recs {
			s = append(s, r.Client+":"+r.Tool+":"+r.Outcome)
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct{ q, tok, want string }{
		{"", carolToken, "bob:fx__crash:denied alice:fx__echo:ok bob:fx__add:ok alice:fx__echo:ok"},
		{"?limit=2", carolToken, "bob:fx__crash:denied alice:fx__echo:ok"},
		{"?client=bob", carolToken, "bob:fx__crash:denied bob:fx__add:ok"},
		{"?outcome=denied", carolToken, "bob:fx__crash:denied"},
		{"?tool=fx__echo&client=alice", carolToken, "alice:fx__echo:ok alice:fx__echo:ok"},
		{"", aliceToken, "alice:fx__echo:ok alice:fx__echo:ok"},
		{"?client=alice", aliceToken, "alice:fx__echo:ok alice:fx__echo:ok"},
		{"", bobToken, "bob:fx__crash:denied bob:fx__add:ok"},
	} {
		if got := summary(get(tc.q, tc.tok)); got != tc.want {
			t.Errorf("GET /api/v1/audit%s as %s:\n got %s\nwant %s", tc.q, tc.tok[:5], got, tc.want)
		}
	}
	// The page's audit table: alice sees her records only, carol all.
	auditTable := func(tok string) string {
		t.Helper()
		resp, body := do(t, noRedirects, "GET", u+"/", nil, "Authorization", "Bearer "+tok)
		if resp.StatusCode != 200 {
			t.Fatalf("GET / : %d", resp.StatusCode)
		}
		_, table, _ := strings.Cut(body, `<table id="audit"`)
		return table
	}
	if tbl := auditTable(aliceToken); strings.Contains(tbl, "<td>bob</td>") || !strings.Contains(tbl, "<td>alice</td>") {
		t.Errorf("alice's page: another client's records, or not her own:\n%s", tbl)
	}
	if tbl := auditTable(carolToken); !strings.Contains(tbl, "<td>bob</td>") || !strings.Contains(tbl, "<td>alice</td>") {
		t.Errorf("the admin's page lacks a client's records:\n%s", tbl)
	}

	recs := get("?tool=fx__echo&limit=1", carolToken)
	if len(recs) != 1 || len(recs[0].Args) > 9<<10 || !strings.Contains(string(recs[0].Args), "truncated") {
		t.Errorf("a 64 KiB argument is kept as %d bytes: %.80s", len(recs[0].Args), recs[0].Args)
	}
}

// sseEvent is one event read from a text/event-stream.
type sseEvent struct{ typ, data string }

// readEvents reads events from r until it ends, sending each on out.
func readEvents(r io.Reader, out chan<- sseEvent) {
	defer close(out)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.typ != "" || ev.data != "" {
				out <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			ev.typ = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			ev.data += line[len("data: "):]
		}
	}
}

// TestEventsStream: GET /api/v1/events streams an "audit" event for a call
// (only the caller's own for a non-admin) and "state" events, with the
// backend's status, when a backend's process is killed; it ends when the
// Gateway is closed.
func TestEventsStream(t *testing.T) {
	f := start(t, dashConfig)
	u := base(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	open := func(tok string) <-chan sseEvent {
		req, _ := http.NewRequestWithContext(ctx, "GET", u+"/api/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("GET /api/v1/events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		ch := make(chan sseEvent, 1000)
		go readEvents(resp.Body, ch)
		return ch
	}
	admin, alice := open(carolToken), open(aliceToken)
	if _, err := f.h.CallTool(host.WithClient(ctx, "bob"), "fx__add", map[string]any{"a": 1, "b": 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.CallTool(host.WithClient(ctx, "alice"), "fx__echo", map[string]any{"text": "hi"}); err != nil {
		t.Fatal(err)
	}
	next := func(ch <-chan sseEvent, typ string) sseEvent {
		t.Helper()
		for {
			select {
			case ev, ok := <-ch:
				if !ok {
					t.Fatalf("the stream ended before a %q event", typ)
				}
				if ev.typ == typ {
					return ev
				}
			case <-ctx.Done():
				t.Fatalf("no %q event", typ)
			}
		}
	}
	var rec host.AuditRecord
	if err := json.Unmarshal([]byte(next(admin, "audit").data), &rec); err != nil || rec.Client != "bob" || rec.Tool != "fx__add" {
		t.Fatalf("the admin's first audit event: %+v %v", rec, err)
	}
	if err := json.Unmarshal([]byte(next(alice, "audit").data), &rec); err != nil || rec.Client != "alice" {
		t.Fatalf("alice's first audit event: %+v %v (another client's record leaked)", rec, err)
	}

	// A record's text cannot forge SSE framing: it stays one audit event.
	forged := "boom\n\nevent: state\ndata: {\"backend\":\"fx\",\"state\":\"failed\"}\n\n"
	f.m.Record(host.AuditRecord{Time: time.Now(), Client: "bob", Tool: "fx__add", Outcome: host.OutcomeBackendError, Error: forged})
	for rec.Error != forged {
		select {
		case ev := <-admin:
			if ev.typ == "state" {
				t.Fatalf("a state event before the forged record's: %q", ev.data)
			}
			if ev.typ == "audit" {
				if err := json.Unmarshal([]byte(ev.data), &rec); err != nil {
					t.Fatal(err)
				}
			}
		case <-ctx.Done():
			t.Fatal("no event for the forged record")
		}
	}

	pid := 0
	for _, st := range f.h.Status() {
		if st.Name == "fx" {
			pid = st.Pid
		}
	}
	if pid == 0 {
		t.Fatal("fx has no pid")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for {
		var he gateway.HostEvent
		if err := json.Unmarshal([]byte(next(admin, "state").data), &he); err != nil {
			t.Fatal(err)
		}
		if he.Backend == "fx" && he.State != host.StateReady {
			if he.Status == nil || he.Status.Name != "fx" {
				t.Fatalf("a state event without the backend's status: %+v", he)
			}
			break
		}
	}

	f.g.Close()
	for range admin { // drained to its end: the stream ended
	}
}

// dialRaw opens a TCP connection with a small receive buffer that sends
// GET path and never reads.
func dialRaw(t *testing.T, u, path string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", strings.TrimPrefix(u, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, strings.TrimPrefix(u, "http://")); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestEventsSlowReaderDropped: a client may hold MaxEventStreams streams
// (one more is 429); streams whose client never reads are dropped once
// events pile up (their queue or a write deadline), never buffered without
// bound, which frees their places.
func TestEventsSlowReaderDropped(t *testing.T) {
	f := start(t, `
[servers.fx]
command = "@FIXTURE@"
startup_timeout = "5m"

[serve]
write_timeout = "1s"
`)
	u := base(t, f)
	for i := range gateway.MaxEventStreams {
		// Each stream holds its place once its answer has begun.
		c := dialRaw(t, u, "/api/v1/events")
		_ = c.SetReadDeadline(time.Now().Add(waitTimeout))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
			t.Fatalf("stream %d: %q, %v", i+1, line, err)
		}
	}
	last := ""
	status := func() int {
		resp, err := http.Get(u + "/api/v1/events")
		if err != nil {
			t.Fatal(err)
		}
		body := make([]byte, 512)
		n, _ := io.ReadAtLeast(resp.Body, body, 1)
		resp.Body.Close()
		last = resp.Status + " " + string(body[:n])
		return resp.StatusCode
	}
	if code := status(); code != http.StatusTooManyRequests {
		t.Fatalf("stream %d is not refused: %s", gateway.MaxEventStreams+1, last)
	}

	// Events pile up for the readers that never read: 4 KiB each.
	big := strings.Repeat("e", 2<<10)
	testutil.Eventually(t, waitTimeout, func() bool {
		for range 200 {
			f.m.Record(host.AuditRecord{Time: time.Now(), Tool: "fx__echo", Backend: "fx", Outcome: host.OutcomeBackendError, Error: big})
		}
		return status() == http.StatusOK
	}, "the streams that do not read are not dropped")
}

// TestEventsHeartbeatAndShutdown: an idle event stream gets a heartbeat
// comment; when Serve's context ends, open streams end at once, so Serve
// does not wait out its 5-second grace period for them.
func TestEventsHeartbeatAndShutdown(t *testing.T) {
	t.Cleanup(gateway.SetHeartbeat(50 * time.Millisecond))
	f := start(t, `
[servers.fx]
command = "@FIXTURE@"
startup_timeout = "5m"
`)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- f.g.Serve(ctx, ln) }()

	resp, err := http.Get("http://" + ln.Addr().String() + "/api/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before a heartbeat: %v", err)
		}
		if line == ": heartbeat\n" {
			break
		}
	}
	stopped := time.Now()
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if took := time.Since(stopped); took >= 4*time.Second {
		t.Errorf("Serve took %v to stop with an event stream open: the stream did not end on shutdown", took)
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Logf("the stream ended with %v", err)
	}
}
