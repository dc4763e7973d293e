package transport_test

//lint:file-ignore SA1019 logging is deprecated as of protocol 2026-07-28 (SEP-2577) but servers still use it

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
)

// hostileHTTP serves a go-sdk server's tools over Streamable HTTP (JSON
// responses when jsonResp), except that a tools/call of a tool named
// hostile_<case> is answered by the handler with crafted bytes. The tool
// "chatty" sends a log message, a progress report and a ping before its
// answer, on the call's stream.
func hostileHTTP(tb testing.TB, jsonResp bool) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{}}})
	addEchoSleep(srv)
	mcp.AddTool(srv, &mcp.Tool{Name: "chatty"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "error", Data: "chatty says"})
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"})
		}
		if err := req.Session.Ping(ctx, nil); err != nil {
			return nil, nil, fmt.Errorf("ping: %w", err)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "chatted"}}}, nil, nil
	})
	for _, name := range []string{"hostile_forged", "hostile_cut", "hostile_notjson", "hostile_rpcerror", "hostile_500", "hostile_bigevent", "hostile_crlf", "hostile_202", "hostile_resume", "hostile_stall"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("not reached")
		})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResp})
	var resumeID atomic.Value // the ID of the last hostile_resume call
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "hostile-1" {
			// The resumption of hostile_resume's stream: its answer.
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "id: hostile-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n", resumeID.Load())
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &m)
		if m.Method != "tools/call" || !strings.HasPrefix(m.Params.Name, "hostile_") {
			h.ServeHTTP(w, r)
			return
		}
		id := string(m.ID)
		answer := `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"real"}]}}`
		sse := func(events ...string) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, e := range events {
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", e)
			}
		}
		switch m.Params.Name {
		case "hostile_forged":
			// Answers to IDs that are not the call's, before its own.
			sse(`{"jsonrpc":"2.0","id":"th-999999","result":{"content":[{"type":"text","text":"forged"}]}}`,
				`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"forged"}]}}`,
				`{"jsonrpc":"2.0","method":"notifications/unknown","params":{}}`, answer)
		case "hostile_cut":
			sse(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`)
		case "hostile_notjson":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "<html>not json</html>")
		case "hostile_rpcerror":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32602,"message":"bad params"}}`)
		case "hostile_500":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32603,"message":"boom"}}`)
		case "hostile_bigevent":
			sse(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + strings.Repeat("b", 2<<20) + `"}]}}`)
		case "hostile_crlf":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\r\ndata: "+answer+"\r\n\r\n")
		case "hostile_202":
			w.WriteHeader(http.StatusAccepted)
		case "hostile_resume":
			// A priming event with an ID and a retry delay, then the end:
			// the answer comes on the resumed stream.
			resumeID.Store(id)
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: hostile-1\nretry: 10\ndata:\n\n")
		case "hostile_stall":
			// An event ID, but every resumption fails to progress.
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: stall\nretry: 10\ndata:\n\n")
		}
	}))
	tb.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		for ss := range srv.Sessions() {
			ss.Close()
		}
	})
	return ts.URL
}

// TestHTTPFastCall: over Streamable HTTP (event streams and JSON
// responses), calls of listed tools take toolhost's own path; a log
// message, progress and a server ping on the call's stream are relayed,
// answered and do not disturb the answer; forged answers are ignored; a
// stream cut before the answer, a body that is not JSON-RPC, a JSON-RPC
// error (with 200 or 500), an event over the go-sdk's size limit and a 202
// each fail that call alone with a clear error; a cancelled call returns at
// once; nothing is left running.
func TestHTTPFastCall(t *testing.T) {
	for _, jsonResp := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", jsonResp), func(t *testing.T) {
			url := hostileHTTP(t, jsonResp)
			var logs []string
			var mu sync.Mutex
			tr := transport.NewHTTP(url, &transport.HTTPOptions{Features: &transport.ClientOptions{LogLevel: "debug"}})
			defer tr.Close()
			ctx := context.Background()
			if _, err := tr.Connect(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.ListTools(ctx); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Go(func() {
					want := fmt.Sprint("call ", i)
					res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": want}})
					if err != nil || text(t, res) != want {
						t.Errorf("call %d: %v %v", i, res, err)
					}
				})
			}
			wg.Wait()
			if transport.HTTPFastCalls(tr) < 16 {
				t.Fatalf("%d calls on toolhost's path, want 16", transport.HTTPFastCalls(tr))
			}

			var progress []transport.Progress
			cctx := transport.WithProgress(ctx, func(p transport.Progress) { mu.Lock(); progress = append(progress, p); mu.Unlock() })
			cctx = transport.WithLog(cctx, "debug", func(p *mcp.LoggingMessageParams) { mu.Lock(); logs = append(logs, fmt.Sprint(p.Data)); mu.Unlock() })
			res, err := tr.CallTool(cctx, &mcp.CallToolParams{Name: "chatty"})
			if err != nil || text(t, res) != "chatted" {
				t.Fatalf("chatty: %v %v", res, err)
			}
			mu.Lock()
			if !jsonResp && (len(progress) != 1 || len(logs) != 1 || logs[0] != "chatty says") {
				t.Errorf("on the call's stream: progress %v, logs %v", progress, logs)
			}
			mu.Unlock()

			if res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: "hostile_forged"}); err != nil || text(t, res) != "real" {
				t.Errorf("forged answers: %v %v", res, err)
			}
			if res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: "hostile_crlf"}); err != nil || text(t, res) != "real" {
				t.Errorf("CRLF stream: %v %v", res, err)
			}
			if res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: "hostile_resume"}); err != nil || text(t, res) != "resumed" {
				t.Errorf("a stream resumed with Last-Event-ID: %v %v", res, err)
			}
			for name, want := range map[string]string{
				"hostile_cut":      "ended the call's event stream",
				"hostile_notjson":  "not the answer",
				"hostile_rpcerror": "bad params",
				"hostile_500":      "boom",
				"hostile_202":      "HTTP 202",
				"hostile_stall":    "resuming the call's event stream",
			} {
				_, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: name})
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %v, want an error with %q", name, err, want)
				}
			}

			// A 2 MiB answer is fine; over the event bound (lowered to
			// 1 MiB here; the go-sdk's 16 MiB by default) it fails alone.
			if res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: "hostile_bigevent"}); err != nil || len(text(t, res)) != 2<<20 {
				t.Errorf("a 2 MiB answer: %v", err)
			}
			if !jsonResp {
				restore := transport.SetMaxFastEvent(1 << 20)
				_, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: "hostile_bigevent"})
				restore()
				if err == nil || !strings.Contains(err.Error(), "over") {
					t.Errorf("an event over the bound: %v", err)
				}
			}

			cctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				_, err := tr.CallTool(cctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}})
				done <- err
			}()
			time.Sleep(50 * time.Millisecond) // not synchronisation: the call may or may not be sent yet; both must end at once
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("cancelled call: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("a cancelled call did not return")
			}
			if res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after"}}); err != nil || text(t, res) != "after" {
				t.Errorf("a call after all that: %v %v", res, err)
			}
		})
	}
}

// TestHTTPFastCallKeepsGoSDKPath: a tool not listed yet, and any call of a
// transport whose client answers elicitation, go through the go-sdk.
func TestHTTPFastCallKeepsGoSDKPath(t *testing.T) {
	url := hostileHTTP(t, false)
	ctx := context.Background()
	tr := transport.NewHTTP(url, nil)
	defer tr.Close()
	if _, err := tr.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil || text(t, res) != "x" {
		t.Fatal(res, err)
	}
	if n := transport.HTTPFastCalls(tr); n != 0 {
		t.Errorf("an unlisted tool was called on toolhost's path (%d)", n)
	}
	el := transport.NewHTTP(url, &transport.HTTPOptions{Features: &transport.ClientOptions{
		Elicit: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	}})
	defer el.Close()
	if _, err := el.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := el.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := el.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "y"}}); err != nil || text(t, res) != "y" {
		t.Fatal(res, err)
	}
	if n := transport.HTTPFastCalls(el); n != 0 {
		t.Errorf("a client that answers elicitation called on toolhost's path (%d)", n)
	}
}

// fixtureHTTPProc starts the Go fixture as a Streamable HTTP server of its
// own (a child process, so that only the client's allocations are counted
// here) and returns its URL.
func fixtureHTTPProc(tb testing.TB) string {
	tb.Helper()
	cmd := exec.Command(testutil.Fixture(tb), "-http", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		tb.Fatal(err)
	}
	return "http://" + strings.TrimSpace(addr)
}

// maxHTTPCallBytes bounds what one Streamable HTTP tools/call allocates in
// toolhost, net/http's request and response included.
const maxHTTPCallBytes = 16 << 10

// TestHTTPFastCallAllocs: a Streamable HTTP tools/call to the Go fixture
// (event stream) allocates at most maxHTTPCallBytes in this process.
func TestHTTPFastCallAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	url := fixtureHTTPProc(t)
	ctx := context.Background()
	tr := transport.NewHTTP(url, nil)
	defer tr.Close()
	if _, err := tr.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	p := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	per := testutil.BytesPerCall(200, func() {
		if _, err := tr.CallTool(ctx, p); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%d bytes per call", per)
	if per > maxHTTPCallBytes && !raceOn {
		t.Errorf("a Streamable HTTP tools/call allocates %d bytes, over %d", per, maxHTTPCallBytes)
	}
}
