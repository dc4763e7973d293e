package pdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/toolhost/toolhost/pdk/internal/abi"
)

func init() {
	abi.Export("list_tools", listTools)
	abi.ExportReleasing("call_tool", callTool, releaseOutput)
}

// The output buffer of call_tool is reused by the next call once the kernel
// has its copy (an allocation costs about a microsecond in a Wasm guest).
// Buffers over maxSpare are left to the GC.
var spare struct {
	sync.Mutex
	buf []byte
}

const maxSpare = 64 << 10

// outputBuffer returns an empty buffer with room for n bytes.
func outputBuffer(n int) []byte {
	spare.Lock()
	b := spare.buf
	spare.buf = nil
	spare.Unlock()
	if cap(b) < n {
		return make([]byte, 0, n)
	}
	return b[:0]
}

func releaseOutput(b []byte) {
	if cap(b) > maxSpare {
		return
	}
	spare.Lock()
	spare.buf = b[:0]
	spare.Unlock()
}

// listTools serves the list_tools export: output {"tools":[<Tool>...]} in
// registration order.
func listTools([]byte) ([]byte, error) {
	if err := registryErr(); err != nil {
		return nil, err
	}
	registry.Lock()
	tools := make([]wireTool, 0, len(registry.order))
	for _, name := range registry.order {
		tools = append(tools, registry.tools[name].wire)
	}
	registry.Unlock()
	return json.Marshal(struct {
		Tools []wireTool `json:"tools"`
	}{tools})
}

// callTool serves the call_tool export: input {"request": {"name",
// "arguments", "_meta"}, "context": {...}}, output a CallToolResult.
// Malformed input, an unknown tool and registration problems fail the export
// (error_set, -1); everything the tool itself reports is a result.
func callTool(input []byte) ([]byte, error) {
	if err := registryErr(); err != nil {
		return nil, err
	}
	env, ok := parseEnvelope(input)
	if !ok {
		var err error
		if env, err = decodeEnvelope(input); err != nil {
			return nil, err
		}
	}
	registry.Lock()
	t, ok := registry.tools[string(env.name)]
	registry.Unlock()
	if !ok {
		return nil, fmt.Errorf("pdk: unknown tool %q", env.name)
	}
	c := &Call{Name: t.wire.Name, Arguments: env.args, Meta: env.meta, Context: env.ctx}
	if len(c.Arguments) == 0 || string(c.Arguments) == "null" {
		c.Arguments = json.RawMessage("{}")
	}
	res, err := runHandler(t.handler, c)
	if err != nil {
		res = Errorf("%v", err)
	}
	return res.encode()
}

// decodeEnvelope reads the call_tool input with encoding/json: the slow path
// for inputs parseEnvelope leaves alone, and the source of the error messages
// for malformed input.
func decodeEnvelope(input []byte) (envelope, error) {
	var in struct {
		Request *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
			Meta      json.RawMessage `json:"_meta"`
		} `json:"request"`
		Context json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return envelope{}, fmt.Errorf("pdk: call_tool input is not valid JSON: %w", err)
	}
	if in.Request == nil {
		return envelope{}, errors.New(`pdk: call_tool input has no "request" object`)
	}
	return envelope{name: []byte(in.Request.Name), args: in.Request.Arguments, meta: in.Request.Meta, ctx: in.Context}, nil
}

// runHandler calls h; a panic is logged (it would otherwise vanish with the
// guest's discarded stderr) and then re-raised so the call aborts.
func runHandler(h Handler, c *Call) (*Result, error) {
	defer func() {
		if r := recover(); r != nil {
			abi.Log(abi.LevelError, fmt.Sprintf("pdk: tool %q panicked: %v\n%s", c.Name, r, debug.Stack()))
			panic(r)
		}
	}()
	return h(c)
}
