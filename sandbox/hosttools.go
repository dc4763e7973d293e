package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// toolsModule is the host module through which a plugin calls the host's
// tools (toolhost's code mode): one function,
//
//	call(request i64) -> i64
//
// request is a kernel block holding a JSON request, which the host frees:
// {"op": "call", "name": NAME, "arguments": {...}} or {"op": "search",
// "query": Q, "limit": N}. The answer is a new kernel block holding
// {"result": <CallToolResult, or an array of tools>} or {"error": {"code",
// "message"}} (the codes are the HostToolsCode constants). A refusal is an
// answer, not a trap: the guest decides what to do with it (jsrun throws a
// JavaScript Error). Every plugin's runtime provides the module; only a
// plugin with PluginOptions.Tools may use it (docs/PLUGIN-ABI.md,
// "toolhost:host/tools").
const toolsModule = "toolhost:host/tools"

// HostTools grants a plugin calls of the host's tools (PluginOptions.Tools).
// The limits are per call of the plugin (one run_code run): a zero limit
// means its default.
type HostTools struct {
	// Call makes one inner tool call. ctx is the plugin call's context:
	// the caller's context (its values, its cancellation) with the
	// plugin call's deadline, so the outer call's deadline covers its
	// inner calls. args is a JSON object. An error is answered to the guest
	// with code "failed" and the error's text; a result with IsError is a
	// result. Required.
	Call func(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error)
	// Search answers {"op": "search"}: at most limit tools matching query
	// (limit 0: the searcher's default). Nil: the guest gets "no_search".
	Search func(ctx context.Context, query string, limit int) ([]*mcp.Tool, error)
	// MaxCalls caps the inner calls (and searches) of one plugin call;
	// default DefaultMaxToolCalls.
	MaxCalls int
	// MaxResultBytes caps the total size of the inner results (their JSON
	// encoding) of one plugin call; default DefaultMaxToolResultBytes.
	MaxResultBytes int64
	// MaxArgBytes caps one request (the JSON the guest sends: name and
	// arguments); default DefaultMaxToolArgBytes.
	MaxArgBytes int64
}

// Defaults of HostTools' limits.
const (
	DefaultMaxToolCalls       = 50
	DefaultMaxToolResultBytes = 1 << 20
	DefaultMaxToolArgBytes    = 256 << 10
)

// Codes of the error answers of toolsModule (the guest's
// {"error": {"code"}}); each names one cause.
const (
	// HostToolsNotGranted: the plugin has no PluginOptions.Tools.
	HostToolsNotGranted = "not_granted"
	// HostToolsMaxCalls: the call is over HostTools.MaxCalls.
	HostToolsMaxCalls = "max_calls"
	// HostToolsMaxResult: the inner results are over
	// HostTools.MaxResultBytes; this result is not delivered.
	HostToolsMaxResult = "max_result"
	// HostToolsMaxArgs: the request is over HostTools.MaxArgBytes.
	HostToolsMaxArgs = "max_args"
	// HostToolsFailed: the host's call failed (HostTools.Call's error:
	// denied by policy, unknown tool, invalid arguments, rate limited,
	// timed out...).
	HostToolsFailed = "failed"
	// HostToolsNoSearch: a search, and HostTools.Search is nil.
	HostToolsNoSearch = "no_search"
	// HostToolsBadRequest: the request is not valid JSON of a known op.
	HostToolsBadRequest = "bad_request"
)

// ErrHostTools is wrapped by the error of a toolsModule request the host
// refused (HostToolsError); the guest gets it as an answer, never as a trap.
var ErrHostTools = errors.New("host tool call refused")

// HostToolsError is a refusal answered to the guest: Code is one of the
// HostTools* codes.
type HostToolsError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *HostToolsError) Error() string { return e.Code + ": " + e.Message }
func (e *HostToolsError) Unwrap() error { return ErrHostTools }

// toolsState is an instance's count of the current call's inner calls.
type toolsState struct {
	calls int
	bytes int64
}

func (h *HostTools) limits() (calls int, result, args int64) {
	calls, result, args = h.MaxCalls, h.MaxResultBytes, h.MaxArgBytes
	if calls <= 0 {
		calls = DefaultMaxToolCalls
	}
	if result <= 0 {
		result = DefaultMaxToolResultBytes
	}
	if args <= 0 {
		args = DefaultMaxToolArgBytes
	}
	return calls, result, args
}

// toolsHostModule returns the builder of toolsModule for rt.
func toolsHostModule(rt wazero.Runtime) wazero.HostModuleBuilder {
	return rt.NewHostModuleBuilder(toolsModule).NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) {
			in := instFrom(ctx)
			answer := in.hostTools(stack[0])
			if err := in.callCtx.Err(); err != nil {
				// The plugin call's deadline passed or its caller
				// cancelled during the inner call: the call ends now
				// (classify reports the deadline or the cancellation).
				in.fail(err)
			}
			stack[0] = in.writeBlock(answer)
		}), []api.ValueType{i64}, []api.ValueType{i64}).Export("call")
}

// hostTools serves one toolsModule request block and returns the answer.
func (in *instance) hostTools(off uint64) []byte {
	res, err := in.hostToolsDo(off)
	var answer any
	if err != nil {
		var he *HostToolsError
		if !errors.As(err, &he) {
			he = &HostToolsError{Code: HostToolsFailed, Message: err.Error()}
		}
		answer = struct {
			Error *HostToolsError `json:"error"`
		}{he}
	} else {
		answer = struct {
			Result json.RawMessage `json:"result"`
		}{res}
	}
	b, merr := json.Marshal(answer)
	if merr != nil {
		b, _ = json.Marshal(map[string]any{"error": &HostToolsError{Code: HostToolsFailed, Message: merr.Error()}})
	}
	return b
}

func (in *instance) hostToolsDo(off uint64) (json.RawMessage, error) {
	ht := in.p.tools
	if ht == nil {
		in.free(off)
		return nil, &HostToolsError{Code: HostToolsNotGranted, Message: fmt.Sprintf("plugin %q may not call the host's tools (only a plugin the host grants it to, such as code mode's)", in.p.name)}
	}
	maxCalls, maxResult, maxArgs := ht.limits()
	// The size is checked before the request is copied out.
	prefix, total := in.readBlockPrefix(off, maxArgs)
	if total > maxArgs {
		in.free(off)
		return nil, &HostToolsError{Code: HostToolsMaxArgs, Message: fmt.Sprintf("the request is %d bytes, over max_args (%d bytes)", total, maxArgs)}
	}
	var req struct {
		Op        string          `json:"op"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Query     string          `json:"query"`
		Limit     int             `json:"limit"`
	}
	err := json.Unmarshal(prefix, &req)
	in.free(off)
	if err != nil {
		return nil, &HostToolsError{Code: HostToolsBadRequest, Message: fmt.Sprintf("the request is not valid JSON: %v", err)}
	}
	if req.Op != "call" && req.Op != "search" {
		return nil, &HostToolsError{Code: HostToolsBadRequest, Message: fmt.Sprintf("unknown op %q (want \"call\" or \"search\")", req.Op)}
	}
	in.tools.calls++
	if in.tools.calls > maxCalls {
		return nil, &HostToolsError{Code: HostToolsMaxCalls, Message: fmt.Sprintf("inner call number %d of this run is over max_calls (%d per run)", in.tools.calls, maxCalls)}
	}
	var out []byte
	if req.Op == "search" {
		if ht.Search == nil {
			return nil, &HostToolsError{Code: HostToolsNoSearch, Message: "the host has no tool search for this caller (catalogue = \"search\")"}
		}
		tools, err := ht.Search(in.callCtx, req.Query, req.Limit)
		if err != nil {
			return nil, err
		}
		if tools == nil {
			tools = []*mcp.Tool{}
		}
		out, err = json.Marshal(tools)
		if err != nil {
			return nil, err
		}
	} else {
		if req.Name == "" {
			return nil, &HostToolsError{Code: HostToolsBadRequest, Message: "no tool name given"}
		}
		args := req.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		res, err := ht.Call(in.callCtx, req.Name, args)
		if err != nil {
			return nil, err
		}
		if res == nil {
			res = &mcp.CallToolResult{Content: []mcp.Content{}}
		}
		out, err = json.Marshal(res)
		if err != nil {
			return nil, fmt.Errorf("encoding the result of %s: %w", req.Name, err)
		}
	}
	if in.tools.bytes+int64(len(out)) > maxResult {
		in.tools.bytes = maxResult // later results are refused too
		return nil, &HostToolsError{Code: HostToolsMaxResult, Message: fmt.Sprintf("the result of %d bytes takes this run's inner results over max_result (%d bytes per run)", len(out), maxResult)}
	}
	in.tools.bytes += int64(len(out))
	return out, nil
}
