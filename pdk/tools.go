package pdk

import (
	"encoding/json"
	"fmt"

	"github.com/toolhost/toolhost/pdk/internal/abi"
)

// HostToolError is the host's refusal or failure of a CallHostTool or
// SearchHostTools request. Code is one of the codes of docs/PLUGIN-ABI.md
// ("toolhost:host/tools"): "not_granted" (the host gives this plugin no
// tool calls), "max_calls", "max_result", "max_args" (a per-call bound of
// the host), "failed" (the host's pipeline refused or could not make the
// inner call: denied by policy, unknown tool, invalid arguments, rate
// limited, timed out...), "no_search" (the host has no tool search),
// "bad_request".
type HostToolError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *HostToolError) Error() string { return e.Code + ": " + e.Message }

// CallHostTool calls the host's tool name (a catalogue name, e.g.
// "fs__read_file") with args (a JSON object; nil means {}) and returns the
// MCP CallToolResult as JSON. A tool that ran and failed is a result with
// "isError": true, not an error. The error is a *HostToolError.
//
// The call is synchronous: it returns when the host's call has ended,
// within the deadline of the plugin's own call. Only a plugin the host
// grants tool calls to may make one (toolhost's code mode); others get
// Code "not_granted".
func CallHostTool(name string, args json.RawMessage) (json.RawMessage, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	req, err := json.Marshal(struct {
		Op        string          `json:"op"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{"call", name, args})
	if err != nil {
		return nil, &HostToolError{Code: "bad_request", Message: fmt.Sprintf("arguments are not JSON: %v", err)}
	}
	return hostTools(req)
}

// SearchHostTools asks the host's tool search for at most limit tools
// matching query, and returns them as a JSON array of tools (name, title,
// description, inputSchema). The error is a *HostToolError ("no_search"
// when the host has no tool search).
func SearchHostTools(query string, limit int) (json.RawMessage, error) {
	req, _ := json.Marshal(struct {
		Op    string `json:"op"`
		Query string `json:"query"`
		Limit int    `json:"limit,omitempty"`
	}{"search", query, limit})
	return hostTools(req)
}

func hostTools(req []byte) (json.RawMessage, error) {
	out := abi.ToolsCall(req)
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *HostToolError  `json:"error"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, &HostToolError{Code: "bad_request", Message: fmt.Sprintf("the host's answer is not JSON: %v", err)}
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	return resp.Result, nil
}
