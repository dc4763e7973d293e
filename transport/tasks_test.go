package transport_test

//lint:file-ignore SA1019 elicitation is deprecated as of protocol 2026-07-28 (SEP-2577) but server-everything's task tool uses it

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
)

// everythingStdio is server-everything over stdio with features.
func everythingStdio(t *testing.T, features *transport.ClientOptions) *transport.Stdio {
	testutil.NeedNpx(t)
	return transport.NewStdio(transport.Command{
		Path: "npx", Args: append(append([]string{}, testutil.EverythingArgs...), "stdio"),
		InheritEnv: config.DefaultInheritEnv,
	}, &transport.StdioOptions{Features: features,
		Logger: hclog.New(&hclog.LoggerOptions{Name: t.Name(), Output: testWriter{t}, Level: hclog.Debug})})
}

// taskTransports are the MCP transports tasks are tested on, each to
// server-everything.
var taskTransports = map[string]func(*testing.T, *transport.ClientOptions) transport.Transport{
	"stdio": func(t *testing.T, f *transport.ClientOptions) transport.Transport { return everythingStdio(t, f) },
	"http": func(t *testing.T, f *transport.ClientOptions) transport.Transport {
		return transport.NewHTTP(testutil.StartEverythingHTTP(t), &transport.HTTPOptions{Features: f,
			Logger: hclog.New(&hclog.LoggerOptions{Name: t.Name(), Output: testWriter{t}, Level: hclog.Trace})})
	},
}

// researchText calls server-everything's simulate-research-query, a tool
// whose execution.taskSupport is "required" (it goes through four 1s
// stages), and returns its report.
func researchText(t *testing.T, tr transport.Transport, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: "simulate-research-query", Arguments: args})
	if err != nil {
		t.Fatalf("simulate-research-query: %v", err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("simulate-research-query: tool error or no content: %+v", res)
	}
	text, _ := res.Content[0].(*mcp.TextContent)
	if text == nil || !strings.Contains(text.Text, "# Research Report") {
		t.Fatalf("simulate-research-query: not the final report: %+v", res.Content[0])
	}
	return text.Text
}

// TestTaskRequiredTool: a tool that must run as a task (taskSupport
// "required") is task-augmented, polled and its result fetched; the caller
// gets the final CallToolResult.
func TestTaskRequiredTool(t *testing.T) {
	for name, mk := range taskTransports {
		t.Run(name, func(t *testing.T) {
			tr := mk(t, nil)
			defer tr.Close()
			if _, err := tr.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.ListTools(context.Background()); err != nil {
				t.Fatal(err)
			}
			text := researchText(t, tr, map[string]any{"topic": "wasm"})
			if !strings.Contains(text, "wasm") {
				t.Errorf("report is not about the topic: %.200s", text)
			}
			// The connection still serves ordinary calls.
			res, err := tr.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "after"}})
			if err != nil || res.IsError {
				t.Fatalf("echo after the task: %v %+v", err, res)
			}
		})
	}
}

// TestTaskInputRequired: the task asks for input (input_required); the
// elicitation arrives through tasks/result and is answered by the
// ClientOptions handler; the report carries the answer.
func TestTaskInputRequired(t *testing.T) {
	for name, mk := range taskTransports {
		t.Run(name, func(t *testing.T) {
			var asked atomic.Int32
			tr := mk(t, &transport.ClientOptions{Elicit: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"interpretation": "historical"}}, nil
			}})
			defer tr.Close()
			if _, err := tr.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.ListTools(context.Background()); err != nil {
				t.Fatal(err)
			}
			text := researchText(t, tr, map[string]any{"topic": "rust", "ambiguous": true})
			if asked.Load() != 1 {
				t.Errorf("elicitation asked %d times, want 1", asked.Load())
			}
			if !strings.Contains(text, "historical") {
				t.Errorf("report lacks the clarification: %.400s", text)
			}
		})
	}
}

// logWatch is a log sink that closes a channel when a line contains a
// given text.
type logWatch struct {
	t     *testing.T
	mu    sync.Mutex
	lines []string
	waits map[string]chan struct{}
}

func (w *logWatch) Write(p []byte) (int, error) {
	line := string(p)
	w.t.Log(strings.TrimRight(line, "\n"))
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, line)
	for text, ch := range w.waits {
		if strings.Contains(line, text) {
			close(ch)
			delete(w.waits, text)
		}
	}
	return len(p), nil
}

// seen returns a channel closed once a line with text is logged.
func (w *logWatch) seen(text string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	for _, l := range w.lines {
		if strings.Contains(l, text) {
			close(ch)
			return ch
		}
	}
	if w.waits == nil {
		w.waits = map[string]chan struct{}{}
	}
	w.waits[text] = ch
	return ch
}

// TestTaskCancel: cancelling the caller's context while the task runs ends
// the call with context.Canceled after tasks/cancel was answered by the
// server; the connection stays usable.
func TestTaskCancel(t *testing.T) {
	for name, mk := range map[string]func(*testing.T, hclog.Logger) transport.Transport{
		"stdio": func(t *testing.T, l hclog.Logger) transport.Transport {
			testutil.NeedNpx(t)
			return transport.NewStdio(transport.Command{
				Path: "npx", Args: append(append([]string{}, testutil.EverythingArgs...), "stdio"),
				InheritEnv: config.DefaultInheritEnv,
			}, &transport.StdioOptions{Logger: l})
		},
		"http": func(t *testing.T, l hclog.Logger) transport.Transport {
			return transport.NewHTTP(testutil.StartEverythingHTTP(t), &transport.HTTPOptions{Logger: l})
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := &logWatch{t: t}
			tr := mk(t, hclog.New(&hclog.LoggerOptions{Name: t.Name(), Output: w, Level: hclog.Trace}))
			defer tr.Close()
			if _, err := tr.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.ListTools(context.Background()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			polled := w.seen("task status")
			errc := make(chan error, 1)
			go func() {
				_, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: "simulate-research-query", Arguments: map[string]any{"topic": "go"}})
				errc <- err
			}()
			select {
			case <-polled: // the task exists and was polled once
			case err := <-errc:
				t.Fatalf("the call ended before its task was polled: %v", err)
			}
			cancelled := w.seen("task cancelled")
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled task call: %v, want context.Canceled", err)
			}
			select {
			case <-cancelled:
			default:
				t.Fatal("the call returned before the server answered tasks/cancel")
			}
			researchText(t, tr, map[string]any{"topic": "again"})
		})
	}
}

// TestTaskFixture covers what server-everything does not: a status
// notification that ends the wait, a task the server lost, an answer that
// is not a CreateTaskResult, a failed task, taskSupport "optional" and
// none, and the call's deadline bounding the whole task.
func TestTaskFixture(t *testing.T) {
	tr := transport.NewStdio(transport.Command{Path: testutil.GoBinary(t, "./testdata/taskfixture")},
		&transport.StdioOptions{Logger: hclog.New(&hclog.LoggerOptions{Name: t.Name(), Output: testWriter{t}, Level: hclog.Trace})})
	defer tr.Close()
	if _, err := tr.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.ListTools(context.Background()); err != nil {
		t.Fatal(err)
	}
	call := func(timeout time.Duration, name string, args map[string]any) (string, bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return "", false, err
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError, nil
	}
	for _, c := range []struct {
		name, tool string
		args       map[string]any
		want       string // the result's text, or
		isError    bool
		err        error // the error
	}{
		{name: "polled", tool: "slow", args: map[string]any{"polls": 3}, want: "slow done after 3 polls"},
		{name: "poll-interval-raised", tool: "slow", args: map[string]any{"polls": 3, "poll": 0.001}, want: "slow done after 3 polls"},
		// The server suggests polling every 10 minutes, but says at once
		// that the task completed: the call does not wait for the poll.
		{name: "status-notification", tool: "notify", want: "notify done after 1 polls"},
		{name: "failed", tool: "fail", want: "boom", isError: true},
		{name: "optional", tool: "optional", want: "task call"},
		{name: "not-a-task", tool: "plain", want: "plain call"},
		{name: "lost", tool: "lost", err: transport.ErrTaskLost},
		{name: "not-a-create-task-result", tool: "bad", err: transport.ErrProtocol},
	} {
		t.Run(c.name, func(t *testing.T) {
			text, isError, err := call(20*time.Second, c.tool, c.args)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
				return
			}
			if err != nil || text != c.want || isError != c.isError {
				t.Fatalf("got %q (isError %v), %v; want %q (isError %v)", text, isError, err, c.want, c.isError)
			}
		})
	}
	t.Run("deadline", func(t *testing.T) {
		_, _, err := call(time.Second, "slow", map[string]any{"polls": 1000000, "poll": 100})
		if !errors.Is(err, transport.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
		// The connection goes on.
		if text, _, err := call(20*time.Second, "slow", nil); err != nil || text != "slow done after 2 polls" {
			t.Fatalf("after the deadline: %q, %v", text, err)
		}
	})
}

// taskHTTPServer is a minimal Streamable HTTP MCP server (JSON responses,
// no session, no GET stream) whose tools run as tasks, like taskfixture's
// slow, lost, bad, optional and plain.
func taskHTTPServer(t *testing.T) string {
	var mu sync.Mutex
	polls := map[string]int{}
	seq := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name   string          `json:"name"`
				TaskID string          `json:"taskId"`
				Task   json.RawMessage `json:"task"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || len(m.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		answer := func(key string, v any) {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, key: v})
		}
		result := func(s string) map[string]any {
			return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
		}
		task := func(id, status string) map[string]any {
			return map[string]any{"taskId": id, "status": status, "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:30:00Z", "ttl": 60000, "pollInterval": 1}
		}
		tool := func(name, support string) map[string]any {
			t := map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}}
			if support != "" {
				t["execution"] = map[string]any{"taskSupport": support}
			}
			return t
		}
		mu.Lock()
		defer mu.Unlock()
		switch m.Method {
		case "initialize":
			answer("result", map[string]any{"protocolVersion": "2025-11-25", "serverInfo": map[string]any{"name": "tasks", "version": "1"},
				"capabilities": map[string]any{"tools": map[string]any{}, "tasks": map[string]any{"cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}}})
		case "tools/list":
			answer("result", map[string]any{"tools": []any{tool("slow", "required"), tool("lost", "required"), tool("bad", "required"), tool("optional", "optional"), tool("plain", "")}})
		case "tools/call":
			tasked := len(m.Params.Task) > 0
			switch {
			case m.Params.Name == "plain" && tasked:
				answer("error", map[string]any{"code": -32601, "message": "plain is not a task"})
			case m.Params.Name == "plain" || (m.Params.Name == "optional" && !tasked):
				answer("result", result("plain call"))
			case !tasked:
				answer("error", map[string]any{"code": -32601, "message": "requires task augmentation"})
			case m.Params.Name == "bad":
				answer("result", result("not a task"))
			default:
				seq++
				id := fmt.Sprintf("%s-%d", m.Params.Name, seq)
				answer("result", map[string]any{"task": task(id, "working")})
			}
		case "tasks/get":
			if strings.HasPrefix(m.Params.TaskID, "lost") {
				answer("error", map[string]any{"code": -32602, "message": "Task not found"})
				return
			}
			polls[m.Params.TaskID]++
			status := "working"
			if polls[m.Params.TaskID] >= 2 {
				status = "completed"
			}
			answer("result", task(m.Params.TaskID, status))
		case "tasks/result":
			answer("result", result(fmt.Sprintf("%s after %d polls", m.Params.TaskID, polls[m.Params.TaskID])))
		default:
			answer("error", map[string]any{"code": -32601, "message": "no " + m.Method})
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestTaskHTTPFixture: the HTTP task layer's own paths (a JSON response to
// every request) against taskHTTPServer.
func TestTaskHTTPFixture(t *testing.T) {
	tr := transport.NewHTTP(taskHTTPServer(t), &transport.HTTPOptions{
		Logger: hclog.New(&hclog.LoggerOptions{Name: t.Name(), Output: testWriter{t}, Level: hclog.Trace})})
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := tr.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool, want string
		err        error
	}{
		{tool: "slow", want: "slow-1 after 2 polls"},
		{tool: "optional", want: "optional-2 after 2 polls"},
		{tool: "plain", want: "plain call"},
		{tool: "lost", err: transport.ErrTaskLost},
		{tool: "bad", err: transport.ErrProtocol},
	} {
		res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{}})
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%s: err = %v, want %v", c.tool, err, c.err)
			}
			continue
		}
		if err != nil || res.Content[0].(*mcp.TextContent).Text != c.want {
			t.Errorf("%s: %v, %v; want %q", c.tool, res, err, c.want)
		}
	}
}

// BenchmarkTaskLayer measures what the task layers cost a plain tool call
// (the fixture's echo, a server without tasks): the same call with them
// (layer=on) and without (layer=off), over stdio and Streamable HTTP. The
// cost is the ratio on/off of each pair.
func BenchmarkTaskLayer(b *testing.B) {
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	for _, kind := range []string{"stdio", "http"} {
		for _, layer := range []string{"on", "off"} {
			b.Run("kind="+kind+"/layer="+layer, func(b *testing.B) {
				transport.SetNoTaskLayer(layer == "off")
				defer transport.SetNoTaskLayer(false)
				var tr transport.Transport
				if kind == "stdio" {
					tr = transport.NewStdio(transport.Command{Path: testutil.Fixture(b)}, nil)
				} else {
					srv := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
					mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
						Text string `json:"text"`
					}) (*mcp.CallToolResult, any, error) {
						return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
					})
					ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
					defer ts.Close()
					defer ts.CloseClientConnections()
					tr = transport.NewHTTP(ts.URL, nil)
				}
				defer tr.Close()
				if _, err := tr.Connect(ctx); err != nil {
					b.Fatal(err)
				}
				if _, err := tr.ListTools(ctx); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: params.Name, Arguments: params.Arguments}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
