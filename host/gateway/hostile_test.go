package gateway_test

// Issue 21, the JSON-RPC side: what one hostile client of `toolhost serve`
// must not be able to do to others (a refused DELETE that cancels another
// client's calls, batches that start thousands of calls, ids echoed
// changed, sessions without bound), each over real HTTP connections to the
// gateway's handler on a loopback server.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/gateway"
)

const (
	bobToken   = "bob-token-0123456789ab"
	aliceToken = "alice-token-0123456789"
)

// rawPost sends body to url as the client of tok (none when ""), in
// session sid (none when ""), with the extra headers, and returns the
// status, the body and the response headers; an error other than ctx's
// end fails t.
func rawPost(ctx context.Context, t testing.TB, url, tok, sid, body string, extra ...string) (int, string, http.Header) {
	t.Helper()
	code, b, hdr, err := doPost(ctx, url, tok, sid, body, extra...)
	if err != nil && ctx.Err() == nil {
		t.Error(err)
	}
	return code, b, hdr
}

// attackPost is rawPost for an attacker: a connection the gateway resets
// or closes (a refusal does not wait for the body it refuses: front.go) is
// the attack's lot, not a failure.
func attackPost(ctx context.Context, url, tok, sid, body string, extra ...string) (int, string, http.Header) {
	code, b, hdr, _ := doPost(ctx, url, tok, sid, body, extra...)
	return code, b, hdr
}

func doPost(ctx context.Context, url, tok, sid, body string, extra ...string) (int, string, http.Header, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		req.Header.Set(extra[i], extra[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, string(b), resp.Header, nil
}

// openSession initializes a session at protocol version as the client of
// tok and returns its id.
func openSession(t testing.TB, url, tok, version string) string {
	t.Helper()
	init := strings.Replace(initialize, "2025-11-25", version, 1)
	code, body, hdr := rawPost(context.Background(), t, url, tok, "", init)
	sid := hdr.Get("Mcp-Session-Id")
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize as %s: %d %s", tok, code, body)
	}
	rawPost(context.Background(), t, url, tok, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Protocol-Version", version)
	return sid
}

// deleteSession sends DELETE for sid as the client of tok with the extra
// headers and returns the status.
func deleteSession(t testing.TB, url, tok, sid string, extra ...string) int {
	t.Helper()
	req, _ := http.NewRequest("DELETE", url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Mcp-Session-Id", sid)
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i] == "Host" {
			req.Host = extra[i+1]
			continue
		}
		req.Header.Set(extra[i], extra[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// messages returns the JSON-RPC messages of a response body, JSON or
// server-sent events, with their members undecoded.
func messages(t testing.TB, body string) []map[string]json.RawMessage {
	t.Helper()
	var out []map[string]json.RawMessage
	decode := func(s string) {
		s = strings.TrimSpace(s)
		if s == "" {
			return
		}
		if strings.HasPrefix(s, "[") {
			var batch []map[string]json.RawMessage
			if err := json.Unmarshal([]byte(s), &batch); err != nil {
				t.Fatalf("response %q: %v", s, err)
			}
			out = append(out, batch...)
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("response %q: %v", s, err)
		}
		out = append(out, m)
	}
	if !strings.Contains(body, "data:") {
		decode(body)
		return out
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
			decode(data)
		}
	}
	return out
}

// rpcError is the error member of a JSON-RPC response.
type rpcError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

func errorOf(t testing.TB, m map[string]json.RawMessage) *rpcError {
	t.Helper()
	if m["error"] == nil {
		return nil
	}
	var e rpcError
	if err := json.Unmarshal(m["error"], &e); err != nil {
		t.Fatal(err)
	}
	return &e
}

// TestRefusedDeleteKeepsCalls (issue 21 item 1): a DELETE that the gateway
// refuses (403: another client's token, or the session's own client with a
// foreign Host header) does not cancel the session's calls in flight; the
// call runs to its result. (An accepted DELETE still cancels them:
// TestClientCancelsAndDisconnects/delete.)
func TestRefusedDeleteKeepsCalls(t *testing.T) {
	f := start(t, testConfig)
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	url := srv.URL + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	sid := openSession(t, url, bobToken, "2025-11-25")
	calls0, _ := stats(t, f.h)
	// The call sleeps longer than the refused DELETEs take: a DELETE that
	// cancelled it would turn its result into an error.
	const sleep = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fx__sleep","arguments":{"ms":4000}}}`
	type answer struct {
		code int
		body string
	}
	answered := make(chan answer, 1)
	go func() {
		code, body, _ := rawPost(ctx, t, url, bobToken, sid, sleep, "Mcp-Protocol-Version", "2025-11-25")
		answered <- answer{code, body}
	}()
	polls := int64(0)
	eventually(t, "the sleep call to reach the server", func() bool { polls++; c, _ := stats(t, f.h); return c-calls0-polls >= 1 })

	if code := deleteSession(t, url, aliceToken, sid); code != http.StatusForbidden {
		t.Errorf("alice's DELETE of bob's session: %d; want 403", code)
	}
	if code := deleteSession(t, url, bobToken, sid, "Host", "evil.example:80"); code != http.StatusForbidden {
		t.Errorf("bob's DELETE with a foreign Host: %d; want 403", code)
	}
	a := <-answered
	msgs := messages(t, a.body)
	if a.code != http.StatusOK || len(msgs) == 0 || !strings.Contains(string(msgs[len(msgs)-1]["result"]), "slept 4000ms") {
		t.Fatalf("bob's call after refused DELETEs: %d %s; want its result", a.code, a.body)
	}
	// The session is still bob's to end.
	if code := deleteSession(t, url, bobToken, sid); code != http.StatusNoContent {
		t.Errorf("bob's own DELETE: %d; want 204", code)
	}
}

// TestBatchesBySessionVersion (issue 21 item 4): a JSON-RPC batch in a
// session that negotiated 2025-06-18 or later is refused (400, a JSON-RPC
// error with id null) whether or not the request carries
// MCP-Protocol-Version, and none of its calls runs; in a 2025-03-26 session
// a batch is served, up to gateway.MaxBatch messages.
func TestBatchesBySessionVersion(t *testing.T) {
	f := start(t, testConfig)
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	url := srv.URL + "/mcp"
	ctx := context.Background()
	batch := func(n int) string {
		var b strings.Builder
		b.WriteString("[")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"b%d"}}}`, i+1, i)
		}
		b.WriteString("]")
		return b.String()
	}
	echoes := func() int {
		n := 0
		for _, r := range f.records() {
			if r.Tool == "fx__echo" {
				n++
			}
		}
		return n
	}

	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		sid := openSession(t, url, bobToken, version)
		for _, hdr := range [][]string{nil, {"Mcp-Protocol-Version", version}, {"Mcp-Protocol-Version", "2025-03-26"}} {
			code, body, _ := rawPost(ctx, t, url, bobToken, sid, batch(3), hdr...)
			msgs := messages(t, body)
			if code != http.StatusBadRequest || len(msgs) != 1 || string(msgs[0]["id"]) != "null" || errorOf(t, msgs[0]) == nil || errorOf(t, msgs[0]).Code != -32600 ||
				!strings.Contains(errorOf(t, msgs[0]).Message, "batch") {
				t.Errorf("batch in a %s session with headers %q: %d %s; want 400 with a JSON-RPC error, id null, code -32600", version, hdr, code, body)
			}
		}
	}
	if n := echoes(); n != 0 {
		t.Errorf("%d calls of refused batches ran; want none", n)
	}

	legacy := openSession(t, url, bobToken, "2025-03-26")
	code, body, _ := rawPost(ctx, t, url, bobToken, legacy, batch(3))
	if msgs := messages(t, body); code != http.StatusOK || len(msgs) != 3 {
		t.Errorf("a batch of 3 in a 2025-03-26 session: %d %s; want 3 answers", code, body)
	}
	code, body, _ = rawPost(ctx, t, url, bobToken, legacy, batch(gateway.MaxBatch+1))
	if msgs := messages(t, body); code != http.StatusBadRequest || len(msgs) != 1 || string(msgs[0]["id"]) != "null" || !strings.Contains(body, "batch") {
		t.Errorf("a batch of %d in a 2025-03-26 session: %d %s; want 400", gateway.MaxBatch+1, code, body)
	}
	if n := echoes(); n != 3 {
		t.Errorf("%d echo calls ran; want the 3 of the legacy batch", n)
	}
}

// TestConcurrentCallsBounded (issue 21 item 4): a client with
// max_concurrent calls in flight gets its next call answered at once with
// a JSON-RPC error (gateway.CodeTooManyRequests), not queued; another
// client is not affected; the slots come back when the calls end. A batch
// of a legacy session gets the same bound, per message. A stdio session is
// bounded by [serve] max_concurrent.
func TestConcurrentCallsBounded(t *testing.T) {
	f := start(t, testConfig+"max_concurrent = 2\n")
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	url := srv.URL + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	sid := openSession(t, url, bobToken, "2025-11-25")
	other := openSession(t, url, bobToken, "2025-11-25") // the bound is per client, over its sessions
	calls0, _ := stats(t, f.h)
	sleepCtx, cut := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i, s := range []string{sid, other} {
		wg.Go(func() {
			rawPost(sleepCtx, t, url, bobToken, s, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fx__sleep","arguments":{"ms":600000}}}`, 10+i), "Mcp-Protocol-Version", "2025-11-25")
		})
	}
	polls := int64(0)
	eventually(t, "both sleep calls to reach the server", func() bool { polls++; c, _ := stats(t, f.h); return c-calls0-polls >= 2 })

	code, body, _ := rawPost(ctx, t, url, bobToken, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"third"}}}`, "Mcp-Protocol-Version", "2025-11-25")
	msgs := messages(t, body)
	if len(msgs) != 1 || errorOf(t, msgs[0]) == nil || errorOf(t, msgs[0]).Code != gateway.CodeTooManyRequests || string(msgs[0]["id"]) != "3" ||
		!strings.Contains(errorOf(t, msgs[0]).Message, "max_concurrent") {
		t.Errorf("bob's third call in flight: %d %s; want a JSON-RPC error %d naming max_concurrent", code, body, gateway.CodeTooManyRequests)
	}
	// alice is another client.
	asid := openSession(t, url, aliceToken, "2025-11-25")
	if _, body, _ := rawPost(ctx, t, url, aliceToken, asid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"alice is served"}}}`, "Mcp-Protocol-Version", "2025-11-25"); !strings.Contains(body, "alice is served") {
		t.Errorf("alice while bob is at his bound: %s", body)
	}
	cut()
	wg.Wait()
	// The slots come back (both: the client's answer can come before the
	// server has released the cancelled call's slot): a legacy batch of 4
	// runs 2, and the other 2 are refused at once.
	eventually(t, "bob's slots to come back", func() bool { return gateway.ClientInFlight(f.g, "bob") == 0 })
	legacy := openSession(t, url, bobToken, "2025-03-26")
	if _, body, _ := rawPost(ctx, t, url, bobToken, legacy, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"free"}}}`); !strings.Contains(body, `"free"`) {
		t.Errorf("bob's call once his slots are back: %s", body)
	}
	sleeps := `[` + strings.Repeat(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"fx__sleep","arguments":{"ms":2000}}},`, 3) +
		`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"fx__sleep","arguments":{"ms":2000}}}]`
	for i := range 4 {
		sleeps = strings.Replace(sleeps, `"id":"s"`, fmt.Sprintf(`"id":%d`, 20+i), 1)
	}
	code, body, _ = rawPost(ctx, t, url, bobToken, legacy, sleeps)
	ok, busy := 0, 0
	for _, m := range messages(t, body) {
		switch e := errorOf(t, m); {
		case e == nil:
			ok++
		case e.Code == gateway.CodeTooManyRequests:
			busy++
		default:
			t.Errorf("batch answer %s", m["error"])
		}
	}
	if ok != 2 || busy != 2 {
		t.Errorf("a legacy batch of 4 sleeps with max_concurrent 2: %d %s; want 2 results and 2 refusals", code, body)
	}

	// stdio: one session, bounded by [serve] max_concurrent.
	fs := start(t, strings.Replace(testConfig, "[serve.clients.alice]", "[serve]\nmax_concurrent = 1\n\n[serve.clients.alice]", 1))
	cs := memSession(t, fs, mcp.NewClient(&mcp.Implementation{Name: "stdio"}, nil), nil)
	calls0, _ = stats(t, fs.h)
	stdioCtx, stopStdio := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cs.CallTool(stdioCtx, &mcp.CallToolParams{Name: "fx__sleep", Arguments: map[string]any{"ms": 600000}})
	}()
	polls = 0
	eventually(t, "the stdio sleep call to reach the server", func() bool { polls++; c, _ := stats(t, fs.h); return c-calls0-polls >= 1 })
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "second"}})
	if err == nil || !strings.Contains(err.Error(), "max_concurrent") {
		t.Errorf("a second stdio call in flight: %v; want the max_concurrent error", err)
	}
	stopStdio()
	<-done
}

// TestRequestIDsEchoedExactly (issue 21 item 6): every id the gateway
// accepts comes back exactly as sent, and an id it cannot echo exactly (or
// that MCP does not allow) is refused before any handling with a JSON-RPC
// error whose id is null.
func TestRequestIDsEchoedExactly(t *testing.T) {
	f := start(t, testConfig)
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	url := srv.URL + "/mcp"
	sid := openSession(t, url, bobToken, "2025-11-25")
	for _, c := range []struct {
		id     string
		echoed bool
	}{
		{`1`, true}, {`0`, true}, {`-1`, true}, {`42`, true},
		{`9007199254740991`, true},        // 2^53-1
		{`9007199254740992`, true},        // 2^53
		{`-9007199254740992`, true},       // -2^53
		{`9007199254740994`, true},        // 2^53+2: a float64 holds it
		{`-9223372036854775808`, true},    // -2^63
		{`9007199254740993`, false},       // 2^53+1: a float64 does not
		{`9223372036854775807`, false},    // 2^63-1: rounds to 2^63
		{`9223372036854775808`, false},    // 2^63: beyond int64
		{`1180591620717411303424`, false}, // 2^70
		{`1.5`, false}, {`1.0`, false}, {`1e2`, false}, {`1e308`, false}, {`-0`, false}, {`1E400`, false},
		{`"abc"`, true}, {`""`, true}, {`"1.5"`, true}, {`"\u00e9t\u00e9"`, true}, {`"été"`, true},
		{`"\ud800"`, false}, {`"\ud83d\ude00"`, true}, {`"😀"`, true}, {`"a\"b\\c"`, true},
		{`null`, false}, {`true`, false}, {`{}`, false}, {`[]`, false}, {`[1]`, false},
	} {
		t.Run(c.id, func(t *testing.T) {
			code, body, _ := rawPost(context.Background(), t, url, bobToken, sid, `{"jsonrpc":"2.0","id":`+c.id+`,"method":"ping"}`, "Mcp-Protocol-Version", "2025-11-25")
			msgs := messages(t, body)
			if len(msgs) != 1 {
				t.Fatalf("%d %s; want one answer", code, body)
			}
			got := string(msgs[0]["id"])
			if c.echoed {
				same := got == c.id
				if strings.HasPrefix(c.id, `"`) {
					// A string comes back as the same string, perhaps
					// written with other escapes.
					var sent, back string
					same = json.Unmarshal([]byte(c.id), &sent) == nil && json.Unmarshal(msgs[0]["id"], &back) == nil && sent == back
				}
				if code != http.StatusOK || !same || errorOf(t, msgs[0]) != nil {
					t.Errorf("id %s: %d %s; want it echoed exactly", c.id, code, body)
				}
				return
			}
			if e := errorOf(t, msgs[0]); code != http.StatusBadRequest || got != "null" || e == nil || e.Code != -32600 || !strings.Contains(e.Message, "id") {
				t.Errorf("id %s: %d %s; want 400, a JSON-RPC error -32600 with id null", c.id, code, body)
			}
		})
	}
	// A request with two ids is refused too: which one would be answered?
	code, body, _ := rawPost(context.Background(), t, url, bobToken, sid, `{"jsonrpc":"2.0","id":1,"method":"ping","id":2}`, "Mcp-Protocol-Version", "2025-11-25")
	if code != http.StatusBadRequest || !bytes.Contains([]byte(body), []byte(`"id":null`)) {
		t.Errorf("two ids: %d %s; want 400 with id null", code, body)
	}
}

// TestSessionsPerClientBounded (issue 21): a client at max_sessions gets
// 429 with a JSON-RPC error on initialize; another client is not affected;
// a session ended by DELETE or by session_timeout frees its slot. Without
// tokens every client counts as one.
func TestSessionsPerClientBounded(t *testing.T) {
	f := start(t, strings.Replace(testConfig, "[serve.clients.alice]", "[serve]\nsession_timeout = \"2s\"\n\n[serve.clients.alice]", 1)+"max_sessions = 2\n")
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	url := srv.URL + "/mcp"
	ctx := context.Background()
	first := openSession(t, url, bobToken, "2025-11-25")
	openSession(t, url, bobToken, "2025-11-25")
	refused := func(tok string) bool {
		t.Helper()
		code, body, hdr := rawPost(ctx, t, url, tok, "", initialize)
		if code == http.StatusOK {
			if sid := hdr.Get("Mcp-Session-Id"); sid != "" {
				deleteSession(t, url, tok, sid)
			}
			return false
		}
		msgs := messages(t, body)
		if e := errorOf(t, msgs[0]); code != http.StatusTooManyRequests || len(msgs) != 1 || string(msgs[0]["id"]) != "1" || e == nil || e.Code != gateway.CodeTooManyRequests || !strings.Contains(e.Message, "max_sessions") {
			t.Fatalf("initialize over the cap: %d %s; want 429 with a JSON-RPC error naming max_sessions", code, body)
		}
		return true
	}
	if !refused(bobToken) {
		t.Fatal("bob's third session was accepted; want 429")
	}
	if refused(aliceToken) {
		t.Fatal("alice was refused because of bob's sessions")
	}
	if code := deleteSession(t, url, bobToken, first); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	openSession(t, url, bobToken, "2025-11-25") // in the DELETEd session's slot
	if !refused(bobToken) {
		t.Fatal("bob's session over the cap after a DELETE was accepted")
	}
	// Idle sessions time out (2s) and free their slots.
	eventually(t, "timed-out sessions to free bob's slots", func() bool { return !refused(bobToken) })

	// Without tokens, all clients are one.
	open := start(t, strings.Split(testConfig, "[serve.clients.alice]")[0]+"[serve]\nmax_sessions = 1\n")
	osrv := httptest.NewServer(open.g.Handler())
	defer osrv.Close()
	openSession(t, osrv.URL+"/mcp", "", "2025-11-25")
	if code, body, _ := rawPost(ctx, t, osrv.URL+"/mcp", "", "", initialize); code != http.StatusTooManyRequests {
		t.Errorf("a second tokenless session with max_sessions 1: %d %s; want 429", code, body)
	}
}
