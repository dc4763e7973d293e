// Command taskfixture is a small MCP server over stdio, written on raw
// JSON-RPC, whose tools run as tasks (MCP 2025-11-25,
// basic/utilities/tasks): the go-sdk has no server-side tasks. The
// transport tests use it for the paths server-everything does not take.
//
// Tools (execution.taskSupport "required" unless said):
//
//	slow      a task that completes after {"polls": N} tasks/get (default 2),
//	          suggesting {"poll": MS} as pollInterval (default 0: none)
//	notify    suggests a pollInterval of 10 minutes, and sends
//	          notifications/tasks/status "completed" right after creating
//	          the task
//	lost      tasks/get answers -32602 (the task is unknown)
//	bad       answers tools/call with a result that is not a CreateTaskResult
//	fail      a failed task whose result has isError
//	optional  taskSupport "optional": says whether it ran as a task
//	plain     no taskSupport: refuses a call with a task
//
// A required tool called without a task is refused with -32601, as the spec
// says. tasks/cancel marks the task cancelled.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

type msg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  any             `json:"result,omitempty"`
	Error   any             `json:"error,omitempty"`
}

type task struct {
	id, tool   string
	status     string
	polls, end int
	poll       float64
}

var (
	out   = bufio.NewWriter(os.Stdout)
	outMu sync.Mutex
	tasks = map[string]*task{}
	seq   int
)

func send(m msg) {
	m.JSONRPC = "2.0"
	b, _ := json.Marshal(m)
	outMu.Lock()
	defer outMu.Unlock()
	out.Write(append(b, '\n'))
	out.Flush()
}

func reply(id json.RawMessage, result any) { send(msg{ID: id, Result: result}) }
func fail(id json.RawMessage, code int, text string) {
	send(msg{ID: id, Error: map[string]any{"code": code, "message": text}})
}

func text(s string, isError bool) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}, "isError": isError}
}

func wire(t *task) map[string]any {
	now := time.Now().UTC().Format(time.RFC3339)
	w := map[string]any{"taskId": t.id, "status": t.status, "createdAt": now, "lastUpdatedAt": now, "ttl": 60000}
	if t.poll > 0 {
		w["pollInterval"] = t.poll
	}
	return w
}

func tool(name, support string) map[string]any {
	t := map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}}
	if support != "" {
		t["execution"] = map[string]any{"taskSupport": support}
	}
	return t
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var m msg
		if json.Unmarshal(in.Bytes(), &m) != nil || len(m.ID) == 0 {
			continue // notifications
		}
		handle(m)
	}
}

func handle(m msg) {
	switch m.Method {
	case "initialize":
		reply(m.ID, map[string]any{
			"protocolVersion": "2025-11-25",
			"serverInfo":      map[string]any{"name": "taskfixture", "version": "1"},
			"capabilities": map[string]any{"tools": map[string]any{},
				"tasks": map[string]any{"cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}},
		})
	case "ping":
		reply(m.ID, map[string]any{})
	case "tools/list":
		reply(m.ID, map[string]any{"tools": []any{tool("slow", "required"), tool("notify", "required"), tool("lost", "required"),
			tool("bad", "required"), tool("fail", "required"), tool("optional", "optional"), tool("plain", "")}})
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments map[string]any  `json:"arguments"`
			Task      json.RawMessage `json:"task"`
		}
		json.Unmarshal(m.Params, &p)
		tasked := len(p.Task) > 0
		switch {
		case p.Name == "plain" && tasked:
			fail(m.ID, -32601, "plain does not run as a task")
			return
		case p.Name == "plain" || (p.Name == "optional" && !tasked):
			reply(m.ID, text("plain call", false))
			return
		case !tasked:
			fail(m.ID, -32601, p.Name+" requires task augmentation (taskSupport: 'required')")
			return
		case p.Name == "bad":
			reply(m.ID, text("not a task", false))
			return
		}
		seq++
		t := &task{id: fmt.Sprintf("task-%d", seq), tool: p.Name, status: "working", end: 2}
		if n, ok := p.Arguments["polls"].(float64); ok {
			t.end = int(n)
		}
		if ms, ok := p.Arguments["poll"].(float64); ok {
			t.poll = ms
		}
		if p.Name == "notify" {
			t.poll, t.end = 600000, 1<<30
		}
		tasks[t.id] = t
		reply(m.ID, map[string]any{"task": wire(t)})
		if p.Name == "notify" {
			t.status = "completed"
			send(msg{Method: "notifications/tasks/status", Params: mustJSON(wire(t))})
		}
	case "tasks/get", "tasks/result", "tasks/cancel":
		var p struct {
			TaskID string `json:"taskId"`
		}
		json.Unmarshal(m.Params, &p)
		t := tasks[p.TaskID]
		if t == nil || t.tool == "lost" {
			fail(m.ID, -32602, "Failed to retrieve task: Task not found")
			return
		}
		switch m.Method {
		case "tasks/get":
			t.polls++
			if t.status == "working" && t.polls >= t.end {
				t.status = "completed"
				if t.tool == "fail" {
					t.status = "failed"
				}
			}
			reply(m.ID, wire(t))
		case "tasks/cancel":
			t.status = "cancelled"
			reply(m.ID, wire(t))
		case "tasks/result":
			switch {
			case t.tool == "fail":
				reply(m.ID, text("boom", true))
			case t.tool == "optional":
				reply(m.ID, text("task call", false))
			default:
				reply(m.ID, text(fmt.Sprintf("%s done after %d polls", t.tool, t.polls), false))
			}
		}
	default:
		fail(m.ID, -32601, "method not found: "+m.Method)
	}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
