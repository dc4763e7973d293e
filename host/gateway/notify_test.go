package gateway_test

//lint:file-ignore SA1019 logging is deprecated as of protocol 2026-07-28 (SEP-2577) but clients and servers still use it

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sseMessages returns the JSON-RPC messages of an SSE body (the data of
// its events), in the order the gateway wrote them.
func sseMessages(t *testing.T, body string) []map[string]any {
	t.Helper()
	var msgs []map[string]any
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("SSE data %q: %v", data, err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// TestLogsPrecedeResult: every notifications/message a backend sends
// during a call reaches the calling client on that call's own response
// stream, before the call's result, on every call (issue 20 item 3: the
// conformance scenario tools-call-with-logging through the gateway lost
// messages). The client reads the raw SSE stream of each POST, so the
// order checked is the order on the wire; the backends are a stdio server
// (the fixture) and a go-sdk server over Streamable HTTP on loopback,
// which sends its messages back to back with no pause before its result.
func TestLogsPrecedeResult(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "up"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}})
	const burst = 5
	mcp.AddTool(up, &mcp.Tool{Name: "burst", Description: "five log messages, then the result"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			for i := range burst {
				if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprintf("m%d", i)}); err != nil {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	mcp.AddTool(up, &mcp.Tool{Name: "steps", Description: "five progress reports, then the result"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			for i := range burst {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: burst}); err != nil {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(upSrv.Close) // after the host's Close
	f := start(t, unpinned+"\n[servers.fx]\ncommand = \"@FIXTURE@\"\nargs = [\"-progress\"]\nstartup_timeout = \"5m\"\n\n[servers.up]\nurl = \""+upSrv.URL+"\"\n")
	url := serveLoopback(t, f)

	code, body, hdr := post(t, url, "", initialize)
	sid := hdr.Get("Mcp-Session-Id")
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", code, body)
	}
	post(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if code, body, _ := post(t, url, sid, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`); code != http.StatusOK {
		t.Fatalf("logging/setLevel: %d %s", code, body)
	}
	for _, tc := range []struct {
		tool, args string
		method     string // of the notifications
		want       int    // notifications per call
	}{
		{"ask__log", `{}`, "notifications/message", 9},
		{"up__burst", `{}`, "notifications/message", burst},
		{"fx__progress", `{"steps":5},"_meta":{"progressToken":"p"}`, "notifications/progress", 5},
		{"up__steps", `{},"_meta":{"progressToken":"p"}`, "notifications/progress", burst},
	} {
		for i := range 40 {
			id := 100 + i
			_, body, _ := post(t, url, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tc.tool, tc.args))
			msgs := sseMessages(t, body)
			logs, result := 0, -1
			for j, m := range msgs {
				switch {
				case m["method"] == tc.method:
					if result >= 0 {
						t.Fatalf("%s call %d: a notification after the result: %s", tc.tool, i, body)
					}
					logs++
				case m["id"] == float64(id):
					result = j
				}
			}
			if result < 0 || logs != tc.want {
				t.Fatalf("%s call %d: %d %s before the result (want %d), result at %d:\n%s", tc.tool, i, logs, tc.method, tc.want, result, body)
			}
		}
	}
}

// tinyBuffers asks the kernel for the smallest socket buffer it allows
// (socket(7): SO_SNDBUF, SO_RCVBUF; Linux clamps to its minimum), so that
// a peer that does not read fills the path after a few KiB.
func tinyBuffers(c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		if serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 1); serr == nil {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1)
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// tinyListener accepts connections with tinyBuffers.
type tinyListener struct{ net.Listener }

func (l tinyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if sc, ok := c.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			_ = tinyBuffers(rc)
		}
	}
	return c, nil
}

// serveTiny serves f's gateway (Gateway.Serve, the handler toolhost serve
// runs) on a loopback listener whose connections have tiny socket buffers,
// until the test ends, and returns its MCP endpoint URL.
func serveTiny(tb testing.TB, f *fixture) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.g.Serve(ctx, tinyListener{ln}) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			tb.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// openUnread opens a session at url whose client then opens the standalone
// SSE stream (GET /mcp) on a connection with tiny buffers and never reads
// past its headers. It returns the session ID and the connection, which
// the caller closes.
func openUnread(url string) (string, net.Conn, error) {
	code, body, hdr, err := doPost(context.Background(), url, "", "", initialize)
	sid := hdr.Get("Mcp-Session-Id")
	if err != nil || code != http.StatusOK || sid == "" {
		return "", nil, fmt.Errorf("initialize: %d %s %v", code, body, err)
	}
	if _, _, _, err := doPost(context.Background(), url, "", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return "", nil, err
	}
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error { return tinyBuffers(c) }}
	conn, err := d.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://"))
	if err != nil {
		return "", nil, err
	}
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if err := req.Write(conn); err != nil {
		conn.Close()
		return "", nil, err
	}
	// The headers only: the body (the stream) is never read.
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 16), req)
	if err != nil || resp.StatusCode != http.StatusOK {
		conn.Close()
		return "", nil, fmt.Errorf("GET /mcp: %v %v", err, resp)
	}
	return sid, conn, nil
}

// TestNonReadingClientDoesNotStallNotifications: a client that opens its
// standalone SSE stream and never reads it (issue 21 item 2) costs the
// gateway at most its own session: through 150 catalogue changes (the
// tiny socket buffers are full after about 40) every other session,
// earlier or later, gets each notifications/tools/list_changed,
// the gateway's goroutines do not grow with the changes, and the
// non-reading session is closed (404) once its queue of notifications is
// full (notify_queue) or a write to its stream times out (write_timeout).
func TestNonReadingClientDoesNotStallNotifications(t *testing.T) {
	for _, tc := range []struct {
		name, serve string
		changes     int
	}{
		// The queue fills long before a write times out.
		{"queue full", "write_timeout = \"10m\"\nnotify_queue = 16", 150},
		// The queue never fills; the blocked write times out.
		{"write timeout", "write_timeout = \"1s\"\nnotify_queue = 65536", 100},
	} {
		t.Run(tc.name, func(t *testing.T) { nonReadingClient(t, tc.serve, tc.changes) })
	}
}

func nonReadingClient(t *testing.T, serve string, changes int) {
	up := mcp.NewServer(&mcp.Implementation{Name: "up"}, nil)
	noop := func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	}
	addTool := func(i int) { mcp.AddTool(up, &mcp.Tool{Name: fmt.Sprintf("t%d", i)}, noop) }
	addTool(0)
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(upSrv.Close) // after the host's Close
	f := start(t, "[servers.up]\nurl = \""+upSrv.URL+"\"\n\n[serve]\n"+serve+"\n")
	url := serveTiny(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	// listener connects a well-behaved client (the go-sdk's, which reads
	// its standalone stream) that reports each list_changed on a channel.
	listener := func() (*mcp.ClientSession, chan struct{}) {
		changed := make(chan struct{}, changes+10)
		c := mcp.NewClient(&mcp.Implementation{Name: "good"}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
		})
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if _, err := cs.ListTools(ctx, nil); err != nil { // its standalone stream is up
			t.Fatal(err)
		}
		return cs, changed
	}
	// waitChange waits for one list_changed on ch.
	waitChange := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%s: no notifications/tools/list_changed", what)
		}
	}

	bad, conn, err := openUnread(url) // the first session: the go-sdk notifies it first
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, early := listener()
	addTool(1)
	waitChange(early, "change 1")
	base := runtime.NumGoroutine()
	for i := 2; i <= changes; i++ {
		addTool(i)
		waitChange(early, fmt.Sprintf("change %d of %d, to a session opened before it", i, changes))
	}
	// A session opened after the attack gets its notifications too.
	late, lateCh := listener()
	addTool(changes + 1)
	waitChange(lateCh, "a session opened after the changes")
	waitChange(early, "the early session, after the changes")
	if res, err := late.ListTools(ctx, nil); err != nil || len(res.Tools) != changes+2 {
		t.Fatalf("the late session lists %d tools (%v), want %d", len(res.Tools), err, changes+2)
	}

	// The non-reading session was dropped, and the goroutines it held
	// are gone: no growth with the number of changes.
	eventually(t, "the non-reading session to be closed", func() bool {
		code, _, _ := post(t, url, bad, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
		return code == http.StatusNotFound
	})
	eventually(t, "the goroutines to settle", func() bool {
		return runtime.NumGoroutine() <= base+20
	})
}
