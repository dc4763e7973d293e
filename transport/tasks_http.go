package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// taskRT does for Streamable HTTP what taskConn does for stdio (see
// tasks.go), one layer lower: it is the http.RoundTripper under the go-sdk's
// StreamableClientTransport (whose connection cannot be wrapped without
// losing its session handling). It reads the answers to initialize and
// tools/list as they stream to the go-sdk; a POST of a tools/call to a tool
// that runs as a task is sent with the task field, polled with POSTs of its
// own (in the caller's goroutine and context) and answered with the response
// to tasks/result, streamed to the go-sdk with its ID changed to the
// tools/call's, so that the server's requests on that stream (elicitation,
// sampling) reach the go-sdk as usual.
type taskRT struct {
	base   http.RoundTripper
	logger hclog.Logger
	ts     taskSupport
	seq    atomic.Uint64
	meta   sessionMeta // the go-sdk's per-request _meta, for http_fast.go

	mu sync.Mutex
	// live maps the JSON text of the go-sdk's ID of a tools/call whose
	// tasks/result is streaming to that request's ID and the task's: a
	// notifications/cancelled for the call is sent for tasks/result, and
	// the task is cancelled.
	live map[string]liveTask
}

type liveTask struct{ resultID, taskID string }

// maxTaskAnswer bounds the bytes read of the answer to one request made
// here other than tasks/result (a CreateTaskResult, a Task): 1 MiB.
const maxTaskAnswer = 1 << 20

func (t *taskRT) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// peek is what RoundTrip reads of a POSTed JSON-RPC message.
type peek struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

func (t *taskRT) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.Body == nil || req.GetBody == nil {
		return t.base.RoundTrip(req)
	}
	// The go-sdk's bodies are in memory (GetBody is set): reading one
	// costs no I/O. Its messages name their method in their first bytes
	// ({"jsonrpc":"2.0","id":N,"method":...}); only the methods read here
	// are read whole.
	b, err := req.GetBody()
	if err != nil {
		return t.base.RoundTrip(req)
	}
	head := make([]byte, 256)
	n, _ := io.ReadFull(b, head)
	head = head[:n]
	tasks := t.ts.active()
	if !bytes.Contains(head, []byte(`"initialize"`)) && !bytes.Contains(head, []byte(`"tools/list"`)) &&
		!(tasks && bytes.Contains(head, []byte(`"tools/call"`))) && !(tasks && bytes.Contains(head, []byte(`"notifications/cancelled"`))) {
		b.Close()
		return t.base.RoundTrip(req)
	}
	rest, err := io.ReadAll(b)
	b.Close()
	body := append(head, rest...)
	var m peek
	if err != nil || json.Unmarshal(body, &m) != nil {
		return t.base.RoundTrip(req)
	}
	switch m.Method {
	case "initialize", "tools/list":
		if m.Method == "tools/list" {
			t.meta.captureBody(body)
		}
		resp, err := t.base.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusOK {
			read := t.ts.initialized
			if m.Method == "tools/list" {
				read = t.ts.listed
			}
			id := string(m.ID)
			resp.Body = newMsgBody(resp, func(raw []byte) []byte {
				var r struct {
					ID     json.RawMessage `json:"id"`
					Result json.RawMessage `json:"result"`
				}
				if json.Unmarshal(raw, &r) == nil && string(r.ID) == id && len(r.Result) > 0 {
					read(r.Result)
				}
				return raw
			}, nil)
		}
		return resp, err
	case "tools/call":
		if len(m.ID) > 0 && t.ts.forTool(m.Params.Name) {
			return t.callTask(req, body, m.ID)
		}
	case "notifications/cancelled":
		t.mu.Lock()
		lt, ok := t.live[string(m.Params.RequestID)]
		t.mu.Unlock()
		if ok {
			// The call's tasks/result is what the server is working on.
			var p map[string]json.RawMessage
			if json.Unmarshal(body, &p) == nil {
				var params map[string]json.RawMessage
				if json.Unmarshal(p["params"], &params) == nil {
					params["requestId"], _ = json.Marshal(lt.resultID)
					p["params"], _ = json.Marshal(params)
					if nb, err := json.Marshal(p); err == nil {
						req = withBody(req, nb)
					}
				}
			}
			resp, err := t.base.RoundTrip(req)
			t.cancelTask(req, lt.taskID)
			return resp, err
		}
	}
	return t.base.RoundTrip(req)
}

func withBody(req *http.Request, body []byte) *http.Request {
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	return r
}

func (t *taskRT) newID() string {
	return "toolhost-task-" + strconv.FormatUint(t.seq.Add(1), 10)
}

// callTask runs the go-sdk's tools/call (body, with ID id) as a task.
func (t *taskRT) callTask(req *http.Request, body []byte, id json.RawMessage) (*http.Response, error) {
	ctx := req.Context()
	var msg map[string]json.RawMessage
	var params map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil || json.Unmarshal(msg["params"], &params) != nil {
		return t.base.RoundTrip(req)
	}
	task := map[string]any{}
	if dl, ok := ctx.Deadline(); ok {
		task["ttl"] = (time.Until(dl) + taskTTLSlack).Milliseconds()
	}
	params["task"], _ = json.Marshal(task)
	msg["params"], _ = json.Marshal(params)
	nb, _ := json.Marshal(msg)
	created, err := t.answer(req, withBody(req, nb), string(id), nil)
	if err != nil {
		return nil, err
	}
	if created.Error != nil {
		return jsonAnswer(req, id, created), nil
	}
	var cr struct {
		Task *wireTask `json:"task"`
	}
	if err := json.Unmarshal(created.Result, &cr); err != nil || cr.Task == nil || cr.Task.TaskID == "" {
		return nil, fmt.Errorf("%w: tools/call with a task: the answer is not a CreateTaskResult", ErrProtocol)
	}
	tk := cr.Task
	idParams, _ := json.Marshal(map[string]string{"taskId": tk.TaskID})
	wake := make(chan struct{}, 1)
	onStatus := func(taskID string) {
		if taskID == tk.TaskID {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
	cancelled := func(err error) (*http.Response, error) {
		if ctx.Err() != nil {
			t.cancelTask(req, tk.TaskID)
			return nil, ctx.Err()
		}
		return nil, err
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for polls := 0; tk.Status == taskWorking; polls++ {
		if polls >= MaxTaskPolls {
			return nil, fmt.Errorf("%w: task %s still working after %d tasks/get (transport.MaxTaskPolls)", ErrTaskLimit, CutText(tk.TaskID, 64), polls)
		}
		timer.Reset(pollInterval(tk.PollInterval))
		select {
		case <-timer.C:
		case <-wake:
		case <-ctx.Done():
			return cancelled(ctx.Err())
		}
		r, err := t.answer(req, t.post(req, t.newIDRaw(), "tasks/get", idParams), "", onStatus)
		if err != nil {
			return cancelled(err)
		}
		if tk, err = polled(tk, r, t.logger); err != nil {
			return nil, err
		}
	}
	if err := settled(tk); err != nil {
		return nil, err
	}
	// tasks/result: its stream carries the server's requests for input and
	// then the result, which the go-sdk takes for its tools/call's.
	rid := t.newID()
	ridJSON, _ := json.Marshal(rid)
	resp, err := t.base.RoundTrip(t.post(req, ridJSON, "tasks/result", idParams))
	if err != nil {
		return cancelled(err)
	}
	key := string(id)
	t.mu.Lock()
	if t.live == nil {
		t.live = map[string]liveTask{}
	}
	t.live[key] = liveTask{resultID: rid, taskID: tk.TaskID}
	t.mu.Unlock()
	forget := func() {
		t.mu.Lock()
		delete(t.live, key)
		t.mu.Unlock()
	}
	var delivered atomic.Bool // the result went by
	closed := func() {
		forget()
		// The go-sdk closes the stream early when the caller gave up.
		if !delivered.Load() && ctx.Err() != nil {
			t.cancelTask(req, tk.TaskID)
		}
	}
	if resp.StatusCode != http.StatusOK {
		forget()
		return resp, nil
	}
	resp.Body = newMsgBody(resp, func(raw []byte) []byte {
		if !bytes.Contains(raw, ridJSON) {
			return raw
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil || !bytes.Equal(bytes.TrimSpace(m["id"]), ridJSON) || m["method"] != nil {
			return raw
		}
		m["id"] = id
		out, err := json.Marshal(m)
		if err != nil {
			return raw
		}
		delivered.Store(true)
		return out
	}, closed)
	return resp, nil
}

func (t *taskRT) newIDRaw() json.RawMessage {
	b, _ := json.Marshal(t.newID())
	return b
}

// post builds a POST of one request made here, on orig's session: its
// session ID, protocol version and authorization.
func (t *taskRT) post(orig *http.Request, id json.RawMessage, method string, params json.RawMessage) *http.Request {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	r, _ := http.NewRequestWithContext(orig.Context(), http.MethodPost, orig.URL.String(), bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	for _, h := range []string{"Mcp-Session-Id", "Mcp-Protocol-Version", "Authorization"} {
		if v := orig.Header.Get(h); v != "" {
			r.Header.Set(h, v)
		}
	}
	return r
}

// answer sends r and reads the response to the request with ID id (the ID
// in r when empty), up to maxTaskAnswer bytes, calling onStatus for each
// notifications/tasks/status before it on an event stream.
func (t *taskRT) answer(orig, r *http.Request, id string, onStatus func(taskID string)) (*jsonrpc.Response, error) {
	if id == "" {
		var m peek
		b, _ := r.GetBody()
		_ = json.NewDecoder(b).Decode(&m)
		id = string(m.ID)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, fmt.Errorf("%w: HTTP 404", mcp.ErrSessionMissing)
	default:
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	lr := io.LimitReader(resp.Body, maxTaskAnswer)
	var found *jsonrpc.Response
	check := func(raw []byte) []byte {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return raw
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			if idJSON(m.ID) == id && found == nil {
				found = m
			}
		case *jsonrpc.Request:
			if m.Method == "notifications/tasks/status" && onStatus != nil {
				var tk wireTask
				if json.Unmarshal(m.Params, &tk) == nil {
					onStatus(tk.TaskID)
				}
			}
		}
		return raw
	}
	mb := newMsgBody(&http.Response{Header: resp.Header, Body: io.NopCloser(lr)}, check, nil)
	buf := make([]byte, 32<<10)
	for found == nil {
		if _, err := mb.Read(buf); err != nil {
			if err == io.EOF {
				return nil, fmt.Errorf("%w: no answer to %s in the response", ErrProtocol, safeText(id, 64))
			}
			return nil, err
		}
	}
	return found, nil
}

func idJSON(id jsonrpc.ID) string {
	b, _ := json.Marshal(id.Raw())
	return string(b)
}

// jsonAnswer is an HTTP response carrying r as the answer to the request
// with ID id.
func jsonAnswer(req *http.Request, id json.RawMessage, r *jsonrpc.Response) *http.Response {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	var werr *jsonrpc.Error
	if errors.As(r.Error, &werr) {
		msg["error"] = werr
	} else {
		msg["result"] = r.Result
	}
	body, _ := json.Marshal(msg)
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Request: req,
	}
}

// cancelTask sends tasks/cancel for taskID on orig's session (when the
// server declared tasks.cancel), waiting at most TaskCancelWait.
func (t *taskRT) cancelTask(orig *http.Request, taskID string) {
	if !t.ts.canCancel() {
		return
	}
	ctx, stop := context.WithTimeout(context.WithoutCancel(orig.Context()), TaskCancelWait)
	defer stop()
	params, _ := json.Marshal(map[string]string{"taskId": taskID})
	r := t.post(orig.WithContext(ctx), t.newIDRaw(), "tasks/cancel", params)
	a, err := t.answer(orig, r, "", nil)
	switch {
	case err != nil:
		t.logger.Warn("tasks/cancel failed; the server's task may run on", "task", CutText(taskID, 64), "error", err)
	case a.Error != nil:
		t.logger.Debug("server refused tasks/cancel", "task", CutText(taskID, 64), "error", capErr(a.Error))
	default:
		t.logger.Debug("task cancelled", "task", CutText(taskID, 64))
	}
}

// msgBody passes an HTTP response body through, calling fn with the text of
// each JSON-RPC message in it (the whole body for application/json, each
// event's data line for text/event-stream) and sending what fn returns in
// its place. onClose, when set, runs once when the body is closed.
type msgBody struct {
	r       *bufio.Reader
	c       io.Closer
	sse     bool
	fn      func([]byte) []byte
	onClose func()
	once    sync.Once
	buf     []byte
	err     error
}

func newMsgBody(resp *http.Response, fn func([]byte) []byte, onClose func()) *msgBody {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return &msgBody{r: bufio.NewReaderSize(resp.Body, 32<<10), c: resp.Body, sse: ct == "text/event-stream", fn: fn, onClose: onClose}
}

func (b *msgBody) Read(p []byte) (int, error) {
	for len(b.buf) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		if !b.sse {
			all, err := io.ReadAll(b.r)
			b.buf, b.err = all, err
			if b.err == nil {
				b.err = io.EOF
			}
			if t := bytes.TrimSpace(all); len(t) > 0 {
				b.buf = b.fn(t)
			}
			continue
		}
		line, err := readLine(b.r, mcp.DefaultMaxEventSize)
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = bytes.TrimSpace(data)
			if len(data) > 0 && data[0] == '{' {
				nl := line[len(line)-1] == '\n'
				line = append([]byte("data: "), b.fn(data)...)
				if nl {
					line = append(line, '\n')
				}
			}
		}
		b.buf, b.err = line, err
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

// readLine reads one line of at most max bytes (the go-sdk's own cap on an
// SSE event, mcp.DefaultMaxEventSize), so a server cannot make it buffer
// more.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		if len(line)+len(frag) > max {
			return nil, fmt.Errorf("an SSE line over %d bytes", max)
		}
		line = append(line, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

func (b *msgBody) Close() error {
	if b.onClose != nil {
		b.once.Do(b.onClose)
	}
	return b.c.Close()
}
