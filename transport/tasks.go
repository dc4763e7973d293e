package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks (MCP 2025-11-25, basic/utilities/tasks; experimental in that
// revision). A server may declare that some of its tools run as tasks
// (tools/list: execution.taskSupport "required" or "optional", and the
// capability tasks.requests.tools.call). The go-sdk (v1.8) has no tasks,
// and its client sends only the methods it knows; so toolhost's transports
// make such calls themselves, under the go-sdk, on the raw JSON-RPC
// connection: the go-sdk's tools/call goes out with the task field (same
// request ID), the CreateTaskResult is kept from the go-sdk, the task is
// polled with tasks/get (every pollInterval, or sooner when a
// notifications/tasks/status arrives) until it is terminal or needs input,
// then tasks/result fetches the final CallToolResult (or the JSON-RPC error),
// which the go-sdk gets as the answer to its tools/call. Server requests made
// while the task runs (elicitation, sampling, progress) reach the go-sdk as
// usual. The caller of CallTool sees an ordinary call.
//
// Only sessions of protocol 2025-11-25 use tasks: from 2026-07-28 on tasks
// are an extension with other methods (SEP-2663), which toolhost does not
// speak yet; a server of that era gets a plain tools/call.

// Bounds on a task-augmented call. The call's context bounds it as a whole
// (for the host: the tool's call timeout).
const (
	// MinTaskPoll is the shortest time between two tasks/get of one task:
	// 100ms (a server's smaller pollInterval is raised to it).
	MinTaskPoll = 100 * time.Millisecond
	// MaxTaskPoll is the longest: 30s (a larger pollInterval is lowered).
	MaxTaskPoll = 30 * time.Second
	// DefaultTaskPoll is used when the server suggests no pollInterval: 500ms.
	DefaultTaskPoll = 500 * time.Millisecond
	// MaxTaskPolls caps the tasks/get requests of one call: 10000.
	MaxTaskPolls = 10000
	// TaskCancelWait bounds how long a cancelled call waits for the server
	// to answer its tasks/cancel: 2s.
	TaskCancelWait = 2 * time.Second
	// taskTTLSlack is added to the call's remaining time for the task's
	// requested ttl, so its result outlives the last poll.
	taskTTLSlack = 60 * time.Second
)

// Errors of task-augmented calls.
var (
	// ErrTaskLost: the server no longer knows a task toolhost created for a
	// call (tasks/get answered an error: the task expired, or the server
	// restarted or forgot it). The call's result is lost; calling again
	// runs the tool again.
	ErrTaskLost = errors.New("backend lost the task of a call")

	// ErrTaskLimit: a task was polled MaxTaskPolls times without ending.
	ErrTaskLimit = errors.New("backend task polled too often")
)

// Task statuses (MCP 2025-11-25, basic/utilities/tasks, "Task Status").
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// wireTask is a Task as the spec's schema has it (the fields toolhost
// reads).
type wireTask struct {
	TaskID        string   `json:"taskId"`
	Status        string   `json:"status"`
	StatusMessage string   `json:"statusMessage,omitempty"`
	PollInterval  *float64 `json:"pollInterval,omitempty"`
}

// taskSupport records what a server said about tasks: the capability
// tasks.requests.tools.call and tasks.cancel (initialize), and each tool's
// execution.taskSupport (tools/list).
type taskSupport struct {
	mu       sync.Mutex
	toolCall bool // tasks.requests.tools.call, on a 2025-11-25 session
	cancel   bool // tasks.cancel
	tools    map[string]bool
	tasked   int // tools in tools that are tasks
	// plainTools: the tools listed without x-mcp-header annotations in
	// their input schema, which toolhost's own tools/call may call over
	// Streamable HTTP (http_fast.go).
	plainTools map[string]bool
}

// plain reports whether name was listed, is not to be task-augmented and
// has no x-mcp-header annotation (http_fast.go).
func (t *taskSupport) plain(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.plainTools[name] && !(t.toolCall && t.tools[name])
}

// forTool reports whether a call of the server's tool name is to be
// task-augmented: the server declared tasks.requests.tools.call and the
// tool's taskSupport is "required" or "optional".
func (t *taskSupport) forTool(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.toolCall && t.tools[name]
}

// active reports whether any tool is to be task-augmented, so that the
// calls of a server without tasks are not decoded.
func (t *taskSupport) active() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.toolCall && t.tasked > 0
}

func (t *taskSupport) canCancel() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cancel
}

// initialized reads an initialize result.
func (t *taskSupport) initialized(raw json.RawMessage) {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tasks *struct {
				Cancel   json.RawMessage `json:"cancel"`
				Requests *struct {
					Tools *struct {
						Call json.RawMessage `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
			} `json:"tasks"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return
	}
	tasks := r.Capabilities.Tasks
	t.mu.Lock()
	defer t.mu.Unlock()
	// Tasks as this file speaks them exist in protocol 2025-11-25 only.
	t.toolCall = r.ProtocolVersion == "2025-11-25" && tasks != nil && tasks.Requests != nil &&
		tasks.Requests.Tools != nil && present(tasks.Requests.Tools.Call)
	// The tools stay: an HTTP transport re-initializes a lost session of
	// the same server without listing them again.
	t.cancel = tasks != nil && present(tasks.Cancel)
}

func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// listed reads a tools/list result page.
func (t *taskSupport) listed(raw json.RawMessage) {
	var r struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tools == nil || len(t.tools) > MaxTools {
		t.tools, t.tasked = map[string]bool{}, 0
	}
	if t.plainTools == nil || len(t.plainTools) > MaxTools {
		t.plainTools = map[string]bool{}
	}
	for _, tool := range r.Tools {
		t.plainTools[tool.Name] = !bytes.Contains(tool.InputSchema, []byte("x-mcp-header"))
		ts := ""
		if tool.Execution != nil {
			ts = tool.Execution.TaskSupport
		}
		task := ts == "required" || ts == "optional"
		if task != t.tools[tool.Name] {
			if task {
				t.tasked++
			} else {
				t.tasked--
			}
		}
		t.tools[tool.Name] = task
	}
}

// taskConn is an mcp.Connection under the go-sdk's client that runs
// task-augmented tool calls (see above). It reads the inner connection on a
// goroutine of its own (started by newTaskConn, ended by Close or when the
// inner connection ends), so that the answers to its own requests are
// routed while the go-sdk waits.
type taskConn struct {
	inner  mcp.Connection
	logger hclog.Logger
	ts     taskSupport

	in       chan jsonrpc.Message // from the reader, for the go-sdk
	injected chan jsonrpc.Message // made here, for the go-sdk
	readErr  error                // why the reader stopped; set before in is closed
	closed   chan struct{}
	once     sync.Once
	done     chan struct{} // closed when the reader has returned

	seq     atomic.Uint64
	mu      sync.Mutex
	tapped  map[jsonrpc.ID]string                 // go-sdk requests whose answers are read: initialize, tools/list
	waiting map[jsonrpc.ID]chan *jsonrpc.Response // requests made here (and the go-sdk's tasked tools/call)
	status  map[string]chan struct{}              // task ID -> woken by notifications/tasks/status
	early   map[string]bool                       // task IDs whose status came before their call waited
}

var _ mcp.Connection = (*taskConn)(nil)

// noTaskLayer, set only by benchmarks (export_test.go), leaves the task
// layers out, to measure what they cost a plain call.
var noTaskLayer bool

// taskTransport is an mcp.Transport whose connection is a taskConn.
type taskTransport struct {
	inner  mcp.Transport
	logger hclog.Logger
	conn   *taskConn // the last connection made (nil: none, or noTaskLayer)
}

func (t *taskTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil || noTaskLayer {
		return c, err
	}
	t.conn = newTaskConn(c, t.logger)
	return t.conn, nil
}

func newTaskConn(inner mcp.Connection, logger hclog.Logger) *taskConn {
	c := &taskConn{
		inner: inner, logger: logger,
		in: make(chan jsonrpc.Message), injected: make(chan jsonrpc.Message, 1),
		closed: make(chan struct{}), done: make(chan struct{}),
		tapped: map[jsonrpc.ID]string{}, waiting: map[jsonrpc.ID]chan *jsonrpc.Response{}, status: map[string]chan struct{}{}, early: map[string]bool{},
	}
	go c.read()
	return c
}

// maxTapped bounds the go-sdk requests whose answers are awaited for
// reading (a server that never answers must not grow the map).
const maxTapped = 1024

func (c *taskConn) read() {
	defer close(c.done)
	for {
		msg, err := c.inner.Read(context.Background())
		if err != nil {
			c.readErr = err
			close(c.in)
			return
		}
		if c.intercept(msg) {
			continue
		}
		select {
		case c.in <- msg:
		case <-c.closed:
			c.readErr = mcp.ErrConnectionClosed
			close(c.in)
			return
		}
	}
}

// intercept routes what the go-sdk must not see (the answers to requests made
// here, task status notifications) and reads the answers it taps. It reports
// whether msg was consumed.
func (c *taskConn) intercept(msg jsonrpc.Message) bool {
	switch m := msg.(type) {
	case *jsonrpc.Response:
		c.mu.Lock()
		method, tapped := c.tapped[m.ID]
		delete(c.tapped, m.ID)
		w := c.waiting[m.ID]
		delete(c.waiting, m.ID)
		c.mu.Unlock()
		if w != nil {
			w <- m // buffered, one answer per request
			return true
		}
		if tapped && m.Error == nil {
			switch method {
			case "initialize":
				c.ts.initialized(m.Result)
			case "tools/list":
				c.ts.listed(m.Result)
			}
		}
	case *jsonrpc.Request:
		if m.Method == "notifications/tasks/status" {
			var t wireTask
			if json.Unmarshal(m.Params, &t) == nil {
				c.mu.Lock()
				wake := c.status[t.TaskID]
				if wake == nil && t.TaskID != "" {
					// Sent right after the CreateTaskResult, before the
					// call could wait for it: kept for it, bounded.
					if len(c.early) >= maxTapped {
						c.early = map[string]bool{}
					}
					c.early[t.TaskID] = true
				}
				c.mu.Unlock()
				if wake != nil {
					select {
					case wake <- struct{}{}:
					default:
					}
				}
			}
			return true
		}
	}
	return false
}

// Read implements mcp.Connection.
func (c *taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.injected:
		return m, nil
	case m, ok := <-c.in:
		if !ok {
			return nil, c.readErr
		}
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write implements mcp.Connection. A tools/call of a tool that runs as a
// task blocks here, in the caller's goroutine and context, until the task
// has ended; its final answer then comes from Read.
func (c *taskConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return c.inner.Write(ctx, msg)
	}
	switch req.Method {
	case "initialize", "tools/list":
		c.mu.Lock()
		if len(c.tapped) >= maxTapped {
			c.tapped = map[jsonrpc.ID]string{}
		}
		c.tapped[req.ID] = req.Method
		c.mu.Unlock()
	case "tools/call":
		var p struct {
			Name string `json:"name"`
		}
		if c.ts.active() && json.Unmarshal(req.Params, &p) == nil && c.ts.forTool(p.Name) {
			return c.callTask(ctx, req)
		}
	}
	return c.inner.Write(ctx, msg)
}

// callTask runs the go-sdk's tools/call req as a task and hands its final
// answer to Read. It returns ctx's error when ctx ends first (after asking
// the server to cancel the task), or the inner connection's error.
func (c *taskConn) callTask(ctx context.Context, req *jsonrpc.Request) error {
	res, err := c.runTask(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) && !errors.Is(err, ErrTaskLost) && !errors.Is(err, ErrTaskLimit) && !errors.Is(err, ErrProtocol) {
			return err // the connection failed
		}
		res = &jsonrpc.Response{ID: req.ID, Error: err}
	}
	res.ID = req.ID
	select {
	case c.injected <- res:
		return nil
	case <-c.closed:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *taskConn) runTask(ctx context.Context, req *jsonrpc.Request) (*jsonrpc.Response, error) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(req.Params, &params); err != nil {
		return nil, fmt.Errorf("%w: tools/call params: %v", ErrProtocol, err)
	}
	task := map[string]any{}
	if dl, ok := ctx.Deadline(); ok {
		task["ttl"] = (time.Until(dl) + taskTTLSlack).Milliseconds()
	}
	params["task"], _ = json.Marshal(task)
	raw, _ := json.Marshal(params)
	created, err := c.roundTrip(ctx, req.ID, "tools/call", raw)
	if err != nil {
		return nil, err
	}
	if created.Error != nil {
		// Refused before any task existed: the go-sdk gets the error.
		return created, nil
	}
	var cr struct {
		Task *wireTask `json:"task"`
	}
	if err := json.Unmarshal(created.Result, &cr); err != nil || cr.Task == nil || cr.Task.TaskID == "" {
		return nil, fmt.Errorf("%w: tools/call with a task: the answer is not a CreateTaskResult", ErrProtocol)
	}
	t := cr.Task
	wake := make(chan struct{}, 1)
	c.mu.Lock()
	c.status[t.TaskID] = wake
	if c.early[t.TaskID] {
		delete(c.early, t.TaskID)
		wake <- struct{}{}
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.status, t.TaskID)
		c.mu.Unlock()
	}()
	res, err := c.await(ctx, t, wake)
	if err != nil && ctx.Err() != nil {
		c.cancelTask(ctx, t.TaskID)
	}
	return res, err
}

// await polls task t until it ends or needs input, then fetches its result.
func (c *taskConn) await(ctx context.Context, t *wireTask, wake <-chan struct{}) (*jsonrpc.Response, error) {
	idParams, _ := json.Marshal(map[string]string{"taskId": t.TaskID})
	timer := time.NewTimer(0)
	defer timer.Stop()
	for polls := 0; ; polls++ {
		if t.Status != taskWorking {
			break
		}
		if polls >= MaxTaskPolls {
			return nil, fmt.Errorf("%w: task %s still working after %d tasks/get (transport.MaxTaskPolls)", ErrTaskLimit, CutText(t.TaskID, 64), polls)
		}
		timer.Reset(pollInterval(t.PollInterval))
		select {
		case <-timer.C:
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		r, err := c.roundTrip(ctx, c.newID(), "tasks/get", idParams)
		if err != nil {
			return nil, err
		}
		if t, err = polled(t, r, c.logger); err != nil {
			return nil, err
		}
	}
	if err := settled(t); err != nil {
		return nil, err
	}
	// tasks/result blocks until the task is terminal; the server's requests
	// for input arrive meanwhile (MCP 2025-11-25, "Input Required Status").
	// Its answer is exactly what the tools/call would have answered.
	return c.roundTrip(ctx, c.newID(), "tasks/result", idParams)
}

// pollInterval is the server's suggestion (milliseconds) within
// [MinTaskPoll, MaxTaskPoll], DefaultTaskPoll without one.
func pollInterval(ms *float64) time.Duration {
	if ms == nil {
		return DefaultTaskPoll
	}
	d := time.Duration(*ms * float64(time.Millisecond))
	return min(max(d, MinTaskPoll), MaxTaskPoll)
}

func (c *taskConn) newID() jsonrpc.ID {
	id, _ := jsonrpc.MakeID("toolhost-task-" + strconv.FormatUint(c.seq.Add(1), 10))
	return id
}

// roundTrip sends one request (its params raw) and waits for its answer,
// routed by the reader. When ctx ends first the server is sent
// notifications/cancelled for it.
func (c *taskConn) roundTrip(ctx context.Context, id jsonrpc.ID, method string, params json.RawMessage) (*jsonrpc.Response, error) {
	w := make(chan *jsonrpc.Response, 1)
	c.mu.Lock()
	c.waiting[id] = w
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.waiting, id)
		c.mu.Unlock()
	}
	if err := c.inner.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
		forget()
		return nil, err
	}
	select {
	case r := <-w:
		return r, nil
	case <-c.done:
		forget()
		if c.readErr != nil {
			return nil, c.readErr
		}
		return nil, mcp.ErrConnectionClosed
	case <-ctx.Done():
		forget()
		nctx, stop := context.WithTimeout(context.WithoutCancel(ctx), TaskCancelWait)
		defer stop()
		cp, _ := json.Marshal(map[string]any{"requestId": id.Raw(), "reason": ctx.Err().Error()})
		_ = c.inner.Write(nctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: cp})
		return nil, ctx.Err()
	}
}

// cancelTask asks the server to cancel task id (when it declared
// tasks.cancel), waiting at most TaskCancelWait for its answer.
func (c *taskConn) cancelTask(ctx context.Context, id string) {
	if !c.ts.canCancel() {
		return
	}
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), TaskCancelWait)
	defer stop()
	params, _ := json.Marshal(map[string]string{"taskId": id})
	r, err := c.roundTrip(cctx, c.newID(), "tasks/cancel", params)
	switch {
	case err != nil:
		c.logger.Warn("tasks/cancel failed; the server's task may run on", "task", CutText(id, 64), "error", err)
	case r.Error != nil:
		c.logger.Debug("server refused tasks/cancel", "task", CutText(id, 64), "error", capErr(r.Error))
	default:
		c.logger.Debug("task cancelled", "task", CutText(id, 64))
	}
}

// Close implements mcp.Connection: it closes the inner connection and waits
// for the reader to return. Idempotent.
func (c *taskConn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.closed)
		err = c.inner.Close()
	})
	<-c.done
	return err
}

// SessionID implements mcp.Connection.
func (c *taskConn) SessionID() string { return c.inner.SessionID() }

// polled is the task after a tasks/get that answered r: the answer's status
// with prev's ID (and poll interval, when the answer gives none). Errors: an
// error answer wraps ErrTaskLost; an answer that is not a Task, ErrProtocol.
func polled(prev *wireTask, r *jsonrpc.Response, logger hclog.Logger) (*wireTask, error) {
	if r.Error != nil {
		return nil, fmt.Errorf("%w: tasks/get %s: %v", ErrTaskLost, CutText(prev.TaskID, 64), r.Error)
	}
	var got wireTask
	if err := json.Unmarshal(r.Result, &got); err != nil || got.Status == "" {
		return nil, fmt.Errorf("%w: tasks/get: the answer is not a Task", ErrProtocol)
	}
	if got.PollInterval == nil {
		got.PollInterval = prev.PollInterval
	}
	got.TaskID = prev.TaskID
	logger.Trace("task status", "task", CutText(got.TaskID, 64), "status", safeText(got.Status, 32), "message", safeText(got.StatusMessage, 256))
	return &got, nil
}

// settled checks that polling ended on a status whose tasks/result answers
// at once: input_required or a terminal one (MCP 2025-11-25 tasks); any
// other status is ErrProtocol.
func settled(t *wireTask) error {
	switch t.Status {
	case taskInputRequired, taskCompleted, taskFailed, taskCancelled:
		return nil
	}
	return fmt.Errorf("%w: task status %q", ErrProtocol, safeText(t.Status, 32))
}
