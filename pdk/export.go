package pdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/toolhost/toolhost/pdk/internal/abi"
)

func init() {
	abi.Export("list_tools", listTools)
	abi.Export("call_tool", callTool)
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
	var in struct {
		Request *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
			Meta      json.RawMessage `json:"_meta"`
		} `json:"request"`
		Context json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf("pdk: call_tool input is not valid JSON: %w", err)
	}
	if in.Request == nil {
		return nil, errors.New(`pdk: call_tool input has no "request" object`)
	}
	registry.Lock()
	t, ok := registry.tools[in.Request.Name]
	registry.Unlock()
	if !ok {
		return nil, fmt.Errorf("pdk: unknown tool %q", in.Request.Name)
	}
	c := &Call{Name: in.Request.Name, Arguments: in.Request.Arguments, Meta: in.Request.Meta, Context: in.Context}
	if len(c.Arguments) == 0 || string(c.Arguments) == "null" {
		c.Arguments = json.RawMessage("{}")
	}
	res, err := runHandler(t.handler, c)
	if err != nil {
		res = Errorf("%v", err)
	}
	return res.encode()
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
