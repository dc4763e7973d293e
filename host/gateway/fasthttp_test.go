package gateway_test

//lint:file-ignore SA1019 sampling and roots are deprecated as of protocol 2026-07-28 (SEP-2577) but clients and servers still use them

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/gateway"
)

// fastHTTPConfig is testConfig with hang callable (a call that ends only
// when it is cancelled) and a session_timeout.
func fastHTTPConfig(timeout string) string {
	src := strings.Replace(testConfig, `deny = ["fx__crash", "fx__freeze", "fx__hang"]`, `deny = ["fx__crash", "fx__freeze"]`, 1)
	return strings.Replace(src, "[serve.clients.alice]", "[serve]\nsession_timeout = \""+timeout+"\"\n\n[serve.clients.alice]", 1)
}

// callBody is a tools/call of tool with the given id, arguments and
// further params members ("" for none).
func callBody(id, tool, args, more string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s%s}}`, id, tool, args, more)
}

// TestFastHTTPSameAsSDK (issue 26, item 1): the HTTP fast path answers
// exactly what the go-sdk answers (status, content type, body: the
// progress notifications before the response too), for the calls it
// takes, and leaves the others to the go-sdk: a call of an unknown or
// denied tool, with arguments that are
// not an object, with another protocol version in its header, and any
// call of a client that declared elicitation (a backend may ask it during
// the call).
func TestFastHTTPSameAsSDK(t *testing.T) {
	fastSrv, sdkSrv := fastAndSDK(t, testConfig)
	ctx := context.Background()
	const v = "2025-11-25"
	hdr := []string{"Mcp-Protocol-Version", v}
	cases := []struct {
		name, body string
		fast       bool
		extra      []string
	}{
		{"echo", callBody("1", "fx__echo", `{"text":"hello"}`, ""), true, hdr},
		{"string id", callBody(`"a\u00e9<b>"`, "fx__echo", `{"text":"x"}`, ""), true, hdr},
		{"html", callBody("14", "fx__echo", `{"text":"<b>&amp;\u2028"}`, ""), true, hdr},
		{"structured", callBody("2", "fx__add", `{"a":1,"b":2}`, ""), true, hdr},
		{"tool error", callBody("3", "fx__fail", `{"message":"no"}`, ""), true, hdr},
		{"invalid arguments", callBody("4", "fx__add", `{"a":"x"}`, ""), true, hdr},
		{"meta", callBody("5", "fx__echo", `{"text":"m"}`, `,"_meta":{"trace":"t"}`), true, hdr},
		{"no arguments", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"fx__echo"}}`, true, hdr},
		{"progress token", callBody("7", "fx__echo", `{"text":"p"}`, `,"_meta":{"progressToken":"tok"}`), true, hdr},
		{"progress reports", callBody("15", "fx__progress", `{"steps":3}`, `,"_meta":{"progressToken":"p<&>\u00e9"}`), true, hdr},
		{"unknown tool", callBody("8", "fx__nope", `{}`, ""), false, hdr},
		{"denied tool", callBody("9", "fx__crash", `{}`, ""), false, hdr},
		{"arguments not an object", callBody("10", "fx__echo", `[1]`, ""), false, hdr},
		{"other version header", callBody("11", "fx__echo", `{"text":"v"}`, ""), false, []string{"Mcp-Protocol-Version", "2025-06-18"}},
		{"no version header", callBody("12", "fx__echo", `{"text":"v"}`, ""), false, nil},
		{"Mcp-Name header", callBody("13", "fx__echo", `{"text":"v"}`, ""), false, append([]string{"Mcp-Name", "fx__echo"}, hdr...)},
	}
	fastSID := openSession(t, fastSrv.URL+"/mcp", bobToken, v)
	sdkSID := openSession(t, sdkSrv.URL+"/mcp", bobToken, v)
	for _, c := range cases {
		before := gateway.FastHTTPServed()
		code, body, h := rawPost(ctx, t, fastSrv.URL+"/mcp", bobToken, fastSID, c.body, c.extra...)
		served := gateway.FastHTTPServed() - before
		wantCode, wantBody, wantH := rawPost(ctx, t, sdkSrv.URL+"/mcp", bobToken, sdkSID, c.body, c.extra...)
		// The progress tool names the token toolhost gave it upstream:
		// a counter.
		body, wantBody = upstreamToken.ReplaceAllString(body, "toolhost-N"), upstreamToken.ReplaceAllString(wantBody, "toolhost-N")
		if code != wantCode || body != wantBody || h.Get("Content-Type") != wantH.Get("Content-Type") || h.Get("Cache-Control") != wantH.Get("Cache-Control") {
			t.Errorf("%s: the fast path answered %d %s %q; the go-sdk %d %s %q", c.name, code, h.Get("Content-Type"), body, wantCode, wantH.Get("Content-Type"), wantBody)
		}
		if want := map[bool]int64{true: 1, false: 0}[c.fast]; served != want {
			t.Errorf("%s: the fast path served %d calls; want %d", c.name, served, want)
		}
	}

	// A client that declared elicitation: its calls are the go-sdk's.
	init := strings.Replace(initialize, `"capabilities":{}`, `"capabilities":{"elicitation":{}}`, 1)
	code, body, h := rawPost(ctx, t, fastSrv.URL+"/mcp", bobToken, "", init)
	sid := h.Get("Mcp-Session-Id")
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", code, body)
	}
	rawPost(ctx, t, fastSrv.URL+"/mcp", bobToken, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr...)
	before := gateway.FastHTTPServed()
	code, body, _ = rawPost(ctx, t, fastSrv.URL+"/mcp", bobToken, sid, callBody("1", "fx__echo", `{"text":"r"}`, ""), hdr...)
	if n := gateway.FastHTTPServed() - before; code != http.StatusOK || !strings.Contains(body, `"text":"r"`) || n != 0 {
		t.Errorf("a call of a client with elicitation: %d %s, %d served by the fast path; want 200, the echo, 0", code, body, n)
	}

	// Another client's token in the session: the go-sdk refuses it.
	code, body, _ = rawPost(ctx, t, fastSrv.URL+"/mcp", aliceToken, fastSID, cases[0].body, hdr...)
	if code != http.StatusForbidden {
		t.Errorf("a call in bob's session with alice's token: %d %s; want 403", code, body)
	}
}

// fastHTTPSession serves fastHTTPConfig(timeout) over HTTP until t ends
// and opens a session of bob's at 2025-11-25: the endpoint, the session's
// id, and the protocol version header to send in it.
func fastHTTPSession(t *testing.T, timeout string) (url, sid string, hdr []string) {
	t.Helper()
	f := start(t, fastHTTPConfig(timeout))
	srv := httptest.NewServer(f.g.Handler())
	t.Cleanup(srv.Close)
	url = srv.URL + "/mcp"
	return url, openSession(t, url, bobToken, "2025-11-25"), []string{"Mcp-Protocol-Version", "2025-11-25"}
}

// fastAndSDK serves one gateway on src twice over HTTP until t ends: with
// the fast path, and with it off (TOOLHOST_GATEWAY_FASTPATH=off, for the
// rest of t).
func fastAndSDK(t *testing.T, src string) (fastSrv, sdkSrv *httptest.Server) {
	t.Helper()
	f := start(t, src)
	fastSrv = httptest.NewServer(f.g.Handler())
	t.Cleanup(fastSrv.Close)
	t.Setenv(gateway.FastPathEnv, "off")
	sdkSrv = httptest.NewServer(f.g.Handler())
	t.Cleanup(sdkSrv.Close)
	return fastSrv, sdkSrv
}

// waitServed waits until the HTTP fast path has served n calls more than
// before.
func waitServed(t *testing.T, before, n int64) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for gateway.FastHTTPServed()-before < n {
		if time.Now().After(deadline) {
			t.Fatalf("the fast path did not take the call in %v", waitTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFastHTTPCancelAndDuplicate: a notifications/cancelled naming a fast
// call in flight cancels it (202, and the call's POST ends); a fast call
// with the id of one in flight is refused as the go-sdk refuses a
// duplicate in-flight id (400, -32600).
func TestFastHTTPCancelAndDuplicate(t *testing.T) {
	url, sid, hdr := fastHTTPSession(t, "1h")
	before := gateway.FastHTTPServed()
	done := make(chan string, 1)
	go func() {
		_, body, _ := rawPost(context.Background(), t, url, bobToken, sid, callBody(`"h1"`, "fx__hang", `{}`, ""), hdr...)
		done <- body
	}()
	waitServed(t, before, 1)
	code, body, _ := rawPost(context.Background(), t, url, bobToken, sid, callBody(`"h1"`, "fx__echo", `{"text":"dup"}`, ""), hdr...)
	if e := errorOf(t, messages(t, body)[0]); code != http.StatusBadRequest || e == nil || e.Code != -32600 || !strings.Contains(e.Message, "duplicate in-flight request ID") {
		t.Errorf("a call with the id of one in flight: %d %s; want 400 and -32600", code, body)
	}
	code, body, _ = rawPost(context.Background(), t, url, bobToken, sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"h1","reason":"test"}}`, hdr...)
	if code != http.StatusAccepted {
		t.Errorf("notifications/cancelled: %d %s; want 202", code, body)
	}
	select {
	case body := <-done:
		t.Logf("the cancelled call's stream: %q", body)
	case <-time.After(waitTimeout):
		t.Fatal("the cancelled call did not end")
	}
}

// TestFastHTTPSessionTimeout: a fast call in progress holds off the
// session's timeout as any POST does, and the timeout still ends a session
// idle for it afterwards.
func TestFastHTTPSessionTimeout(t *testing.T) {
	const timeout = 2 * time.Second
	url, sid, hdr := fastHTTPSession(t, timeout.String())
	before := gateway.FastHTTPServed()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		rawPost(ctx, t, url, bobToken, sid, callBody("1", "fx__hang", `{}`, ""), hdr...)
	}()
	waitServed(t, before, 1)
	time.Sleep(2 * timeout) // the call is in progress all along: the session must outlive it
	code, body, _ := rawPost(context.Background(), t, url, bobToken, sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, hdr...)
	if code != http.StatusAccepted {
		t.Fatalf("the session ended while a fast call was in progress: cancel answered %d %s", code, body)
	}
	cancel()
	<-done
	// Idle now, it ends after the timeout. (Each look is a POST, which
	// restarts the timeout of a session still there: the looks are two
	// timeouts apart.)
	deadline := time.Now().Add(waitTimeout)
	for {
		time.Sleep(2 * timeout)
		code, _, _ := rawPost(context.Background(), t, url, bobToken, sid, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, hdr...)
		if code == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the idle session did not end in %v (session_timeout %v)", waitTimeout, timeout)
		}
	}
}

// TestFastHTTPRoots: a backend's roots/list during a call the HTTP fast
// path serves goes to the client that made the call, on the call's stream
// (the go-sdk client, which declares roots, over Streamable HTTP), and its
// answer reaches the backend; the same with the fast path off.
func TestFastHTTPRoots(t *testing.T) {
	fastSrv, sdkSrv := fastAndSDK(t, unpinned)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	call := func(t *testing.T, url string, client *mcp.Client) (string, bool) {
		t.Helper()
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask__roots", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	withRoots := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil)
	withRoots.AddRoots(&mcp.Root{URI: "file:///client/project", Name: "project"})
	before := gateway.FastHTTPServed()
	if got, isErr := call(t, fastSrv.URL+"/mcp", withRoots); isErr || got != "file:///client/project" {
		t.Errorf("roots through the fast path: %q (isError %v)", got, isErr)
	}
	if n := gateway.FastHTTPServed() - before; n != 1 {
		t.Errorf("the fast path served %d calls; want 1", n)
	}
	if got, isErr := call(t, sdkSrv.URL+"/mcp", withRoots); isErr || got != "file:///client/project" {
		t.Errorf("roots through the go-sdk: %q (isError %v)", got, isErr)
	}
}

// sseEvents posts body in session sid and returns the data of each event
// of the response stream as it comes, and the response's status.
func sseEvents(t *testing.T, ctx context.Context, url, sid, body string) (int, <-chan string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+bobToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				ch <- d
			}
		}
	}()
	return resp.StatusCode, ch
}

// next returns the next event of ch, failing t if the stream ends first.
func next(t *testing.T, ch <-chan string) map[string]json.RawMessage {
	t.Helper()
	select {
	case d, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("event %q: %v", d, err)
		}
		return m
	case <-time.After(waitTimeout):
		t.Fatal("no event")
	}
	return nil
}

// TestFastHTTPRootsHostileClient: on a fast call's stream, the backend's
// roots/list reaches the client as a request with a "toolhost-" id; an
// answer from another session is not taken for it; the client's error
// answer reaches the backend (its call fails with it); a call cancelled
// while its roots/list waits has that request cancelled on the stream
// before its response.
func TestFastHTTPRootsHostileClient(t *testing.T) {
	f := start(t, unpinned)
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	url := srv.URL + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	init := strings.Replace(initialize, `"capabilities":{}`, `"capabilities":{"roots":{"listChanged":true}}`, 1)
	open := func() string {
		code, body, h := rawPost(ctx, t, url, bobToken, "", init)
		if code != http.StatusOK || h.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize: %d %s", code, body)
		}
		sid := h.Get("Mcp-Session-Id")
		rawPost(ctx, t, url, bobToken, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Protocol-Version", "2025-11-25")
		return sid
	}
	sid, other := open(), open()
	hdr := []string{"Mcp-Protocol-Version", "2025-11-25"}

	code, events := sseEvents(t, ctx, url, sid, callBody("1", "ask__roots", `{}`, ""))
	if code != http.StatusOK {
		t.Fatalf("the call: %d", code)
	}
	ask := next(t, events)
	var id string
	if json.Unmarshal(ask["id"], &id) != nil || !strings.HasPrefix(id, "toolhost-") || string(ask["method"]) != `"roots/list"` {
		t.Fatalf("the first event: %v; want a roots/list request with a toolhost- id", ask)
	}
	reply := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"error":{"code":-32603,"message":"no roots here"}}`, id)
	rawPost(ctx, t, url, bobToken, other, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"roots":[{"uri":"file:///forged"}]}}`, id), hdr...)
	if code, body, _ := rawPost(ctx, t, url, bobToken, sid, reply, hdr...); code != http.StatusAccepted {
		t.Fatalf("the answer: %d %s; want 202", code, body)
	}
	res := next(t, events)
	if !strings.Contains(string(res["result"]), `"isError":true`) || !strings.Contains(string(res["result"]), "no roots here") || strings.Contains(string(res["result"]), "forged") {
		t.Errorf("the call's response: %s; want the client's error, not the other session's answer", res["result"])
	}

	code, events = sseEvents(t, ctx, url, sid, callBody("2", "ask__roots", `{}`, ""))
	if code != http.StatusOK {
		t.Fatalf("the second call: %d", code)
	}
	ask = next(t, events)
	if code, body, _ := rawPost(ctx, t, url, bobToken, sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`, hdr...); code != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", code, body)
	}
	c := next(t, events)
	var params struct {
		RequestID string `json:"requestId"`
	}
	_ = json.Unmarshal(c["params"], &params)
	if string(c["method"]) != `"notifications/cancelled"` || params.RequestID == "" || `"`+params.RequestID+`"` != string(ask["id"]) {
		t.Errorf("after the cancel: %v; want notifications/cancelled for %s", c, ask["id"])
	}
	if r := next(t, events); r["id"] == nil || string(r["id"]) != "2" {
		t.Errorf("the cancelled call's response: %v", r)
	}
}

// TestFastHTTPLogsSameAsSDK: a backend's log messages during a fast call
// reach the client on the call's stream exactly as the go-sdk sends them:
// none before the session sets a level, then those at or above it.
func TestFastHTTPLogsSameAsSDK(t *testing.T) {
	fastSrv, sdkSrv := fastAndSDK(t, unpinned)
	ctx := context.Background()
	hdr := []string{"Mcp-Protocol-Version", "2025-11-25"}
	fastSID := openSession(t, fastSrv.URL+"/mcp", bobToken, "2025-11-25")
	sdkSID := openSession(t, sdkSrv.URL+"/mcp", bobToken, "2025-11-25")
	for i, level := range []string{"", "warning", "debug"} {
		if level != "" {
			set := `{"jsonrpc":"2.0","id":99,"method":"logging/setLevel","params":{"level":"` + level + `"}}`
			rawPost(ctx, t, fastSrv.URL+"/mcp", bobToken, fastSID, set, hdr...)
			rawPost(ctx, t, sdkSrv.URL+"/mcp", bobToken, sdkSID, set, hdr...)
		}
		call := callBody(fmt.Sprint(i+1), "ask__log", `{}`, "")
		before := gateway.FastHTTPServed()
		code, body, _ := rawPost(ctx, t, fastSrv.URL+"/mcp", bobToken, fastSID, call, hdr...)
		served := gateway.FastHTTPServed() - before
		wantCode, wantBody, _ := rawPost(ctx, t, sdkSrv.URL+"/mcp", bobToken, sdkSID, call, hdr...)
		if code != wantCode || body != wantBody {
			t.Errorf("level %q: the fast path answered %d %q; the go-sdk %d %q", level, code, body, wantCode, wantBody)
		}
		if n := strings.Count(body, "notifications/message"); served != 1 || n != map[string]int{"": 0, "warning": 6, "debug": 9}[level] {
			t.Errorf("level %q: %d served by the fast path, %d log messages", level, served, n)
		}
	}
}

// TestFastHTTPTypeScriptClient: the TypeScript SDK's client (which declares
// no capability unless told to) over Streamable HTTP has its call served
// by the fast path, and receives the backend's progress reports under its
// own token, in order, before the result.
func TestFastHTTPTypeScriptClient(t *testing.T) {
	f := start(t, strings.Split(testConfig, "[serve.clients.alice]")[0])
	url := serveLoopback(t, f)
	before := gateway.FastHTTPServed()
	r := runTSClient(t, []string{"CALL=fx__progress", `ARGS={"steps":3}`, "PROGRESS=1"}, "http", url)
	if got := resultText(r); r.Result.IsError || !strings.HasPrefix(got, "done") {
		t.Errorf("the call: %+v", r.Result)
	}
	if len(r.Progress) != 3 || r.Progress[0].Progress != 1 || r.Progress[2].Progress != 3 || r.Progress[2].Total != 3 || r.Progress[1].Message != "step 2" {
		t.Errorf("progress received: %+v; want steps 1 to 3 of 3", r.Progress)
	}
	if n := gateway.FastHTTPServed() - before; n != 1 {
		t.Errorf("the fast path served %d calls; want 1", n)
	}
}
