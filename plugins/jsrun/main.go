// Command jsrun is toolhost's code-mode plugin: one tool, run_code, that
// runs a JavaScript program (ECMAScript 5.1+ with most of ES6 and async
// functions, by github.com/dop251/goja, a JavaScript engine in pure Go) as
// the body of an async function. Inside, tools.NAME(args) and
// callTool(NAME, args) call the host's tools through the host function
// toolhost:host/tools (pdk.CallHostTool); the host decides what may be
// called (its pipeline, under the calling client's profile).
//
// Build: cd plugins && GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o jsrun.wasm ./jsrun
package main

//lint:file-ignore ST1005 the errors are JavaScript's own wording ("Uncaught TypeError: ...", "SyntaxError: ..."), shown to the model as they are

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dop251/goja"

	"github.com/toolhost/toolhost/pdk"
)

// Defaults of the limits the host may set in the plugin's config.
const (
	defaultMaxCalls = 50        // inner calls per run ("max_calls")
	defaultMaxLog   = 256 << 10 // bytes of console output kept per run ("max_log")
	defaultMaxStack = 2000      // JavaScript call-stack depth ("max_stack")
	maxCodeBytes    = 1 << 20   // the program text
)

func init() {
	pdk.Register(pdk.Tool{
		Name:  "run_code",
		Title: "Run JavaScript",
		Description: "Run a JavaScript program as the body of an async function (top-level await works). " +
			"await tools.NAME(args) or await callTool(NAME, args) calls a tool and returns its MCP CallToolResult; " +
			"a call the host refuses throws an Error (with .code). console.log output and the returned value " +
			"(as JSON) are the result; a thrown error is an error result with its stack.",
		InputSchema: `{
			"type": "object",
			"properties": {
				"code": {"type": "string", "description": "The program: the body of an async function; return the value you want back."},
				"search": {"type": "boolean", "description": "Set by the host: searchTools is available."}
			},
			"required": ["code"]
		}`,
		OutputSchema: `{
			"type": "object",
			"properties": {
				"result": {"description": "The program's returned value (absent when it returned undefined)."},
				"logs": {"type": "array", "items": {"type": "string"}}
			},
			"required": ["logs"]
		}`,
		Handler: runCode,
	})
}

// limits are the run's bounds, from the plugin's config.
type limits struct {
	maxCalls, maxLog, maxStack int
}

func configInt(key string, def int) int {
	if s, ok := pdk.Config(key); ok {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return def
}

func main() {}

func runCode(c *pdk.Call) (*pdk.Result, error) {
	var in struct {
		Code   string `json:"code"`
		Search bool   `json:"search"`
	}
	if err := c.Bind(&in); err != nil {
		return nil, err
	}
	if len(in.Code) > maxCodeBytes {
		return nil, fmt.Errorf("the program is %d bytes; at most %d", len(in.Code), maxCodeBytes)
	}
	lim := limits{
		maxCalls: configInt("max_calls", defaultMaxCalls),
		maxLog:   configInt("max_log", defaultMaxLog),
		maxStack: configInt("max_stack", defaultMaxStack),
	}
	r := newRun(lim, in.Search)
	value, err := r.run(in.Code)
	logs := r.logs
	if r.logCut > 0 {
		logs = append(logs, fmt.Sprintf("… (%d bytes of console output cut: over max_log, %d bytes)", r.logCut, lim.maxLog))
	}
	if err != nil {
		text := err.Error()
		if len(logs) > 0 {
			text = strings.Join(logs, "\n") + "\n" + text
		}
		return pdk.Errorf("%s", text), nil
	}
	structured := map[string]any{"logs": logs}
	if value != nil {
		structured["result"] = value
	}
	text := strings.Join(logs, "\n")
	if value != nil {
		if text != "" {
			text += "\n"
		}
		text += string(value)
	}
	sc, err := json.Marshal(structured)
	if err != nil {
		return nil, err
	}
	return &pdk.Result{Content: []pdk.Content{pdk.TextContent(text)}, StructuredContent: json.RawMessage(sc)}, nil
}

// run is one program's execution: a fresh goja runtime (nothing survives
// between runs, even on a pooled instance), its console output and its
// inner-call count.
type run struct {
	vm        *goja.Runtime
	lim       limits
	logs      []string
	logBytes  int
	logCut    int
	calls     int
	stringify goja.Callable
	parse     goja.Callable
}

func newRun(lim limits, search bool) *run {
	r := &run{vm: goja.New(), lim: lim, logs: []string{}}
	r.vm.SetMaxCallStackSize(lim.maxStack)
	js := r.vm.Get("JSON").ToObject(r.vm)
	r.stringify, _ = goja.AssertFunction(js.Get("stringify"))
	r.parse, _ = goja.AssertFunction(js.Get("parse"))

	console := r.vm.NewObject()
	for _, level := range []string{"log", "info", "warn", "error", "debug"} {
		prefix := ""
		if level == "warn" || level == "error" {
			prefix = strings.ToUpper(level) + ": "
		}
		_ = console.Set(level, func(call goja.FunctionCall) goja.Value {
			r.log(prefix, call.Arguments)
			return goja.Undefined()
		})
	}
	_ = r.vm.Set("console", console)
	_ = r.vm.Set("callTool", r.callTool)
	if search {
		_ = r.vm.Set("searchTools", r.searchTools)
	}
	return r
}

// prelude defines tools as a proxy: tools.NAME(args) is callTool("NAME", args).
// It is compiled once per instance (preludeProgram) and run in every run's
// fresh runtime.
const prelude = `Object.defineProperty(globalThis, "tools", {value: new Proxy({}, {
	get: function (t, name) { if (typeof name !== "string" || name === "then") return undefined; return function (args) { return callTool(name, args); }; }
}), enumerable: false});
`

var preludeProgram = goja.MustCompile("prelude.js", prelude, true)

// run compiles and runs code as the body of an async function and returns
// its value as JSON (nil for undefined), or the program's error.
func (r *run) run(code string) (json.RawMessage, error) {
	if _, err := r.vm.RunProgram(preludeProgram); err != nil {
		return nil, fmt.Errorf("prelude: %v", err)
	}
	// The code's own lines start at line 2 of the source, so stack traces
	// give line numbers one higher; the wrapper is on one line to keep it so.
	src := "(async function () {\n" + code + "\n})()"
	prog, err := goja.Compile("run_code.js", src, false)
	if err != nil {
		return nil, fmt.Errorf("SyntaxError: %s", syntaxMessage(err))
	}
	v, err := r.vm.RunProgram(prog)
	if err != nil {
		return nil, r.describe(err)
	}
	p, ok := v.Export().(*goja.Promise)
	if !ok {
		return nil, errors.New("internal: the program did not yield a promise")
	}
	switch p.State() {
	case goja.PromiseStateRejected:
		return nil, errors.New("Uncaught " + r.errorText(p.Result()))
	case goja.PromiseStatePending:
		return nil, errors.New("the program never finished: it awaits a promise that nothing resolves (tool calls resolve at once; there are no timers)")
	}
	res := p.Result()
	if res == nil || goja.IsUndefined(res) {
		return nil, nil
	}
	s, err := r.stringify(goja.Undefined(), res)
	if err != nil {
		return nil, fmt.Errorf("the returned value cannot be encoded as JSON: %s", r.describe(err))
	}
	if goja.IsUndefined(s) {
		return nil, nil // a function or a symbol
	}
	return json.RawMessage(s.String()), nil
}

func syntaxMessage(err error) string {
	var se *goja.CompilerSyntaxError
	if errors.As(err, &se) {
		return se.Error()
	}
	return err.Error()
}

// describe renders an error of the runtime: a JavaScript exception (a call
// stack deeper than max_stack is a RangeError exception) with its stack, or a
// Go error.
func (r *run) describe(err error) error {
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return errors.New("Uncaught " + r.errorText(ex.Value()))
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		// goja's stack overflow cannot be caught by try/catch.
		return fmt.Errorf("Uncaught RangeError: Maximum call stack size exceeded (max_stack: %d calls deep)\n%s", r.lim.maxStack, clipStack(so.String()))
	}
	return err
}

// maxStackLines bounds the stack trace an error result carries.
const maxStackLines = 20

// clipStack keeps the first maxStackLines lines of a stack trace.
func clipStack(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= maxStackLines {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:maxStackLines], "\n") + fmt.Sprintf("\n\t… (%d more frames)", len(lines)-maxStackLines)
}

// errorText is an error value as a person reads it: its stack when it is an
// Error (which starts with "Name: message"), else its string form.
func (r *run) errorText(v goja.Value) string {
	if v == nil {
		return "undefined"
	}
	if o, ok := v.(*goja.Object); ok {
		if st := o.Get("stack"); st != nil && !goja.IsUndefined(st) {
			s := st.String()
			msg := o.String()
			if !strings.HasPrefix(s, msg) {
				s = msg + "\n" + s
			}
			return clipStack(s)
		}
	}
	return r.text(v)
}

// text is one console argument as text: a string as it is, anything else as
// JSON when it encodes, else its string form.
func (r *run) text(v goja.Value) string {
	if v == nil || goja.IsUndefined(v) {
		return "undefined"
	}
	if s, ok := v.Export().(string); ok {
		return s
	}
	if o, ok := v.(*goja.Object); ok && o.ClassName() == "Error" {
		return o.String()
	}
	if s, err := r.stringify(goja.Undefined(), v); err == nil && !goja.IsUndefined(s) {
		return s.String()
	}
	return v.String()
}

func (r *run) log(prefix string, args []goja.Value) {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = r.text(a)
	}
	line := prefix + strings.Join(parts, " ")
	if r.logCut > 0 || r.logBytes+len(line) > r.lim.maxLog {
		r.logCut += len(line)
		return
	}
	r.logBytes += len(line)
	r.logs = append(r.logs, line)
}

// jsError makes a JavaScript Error with message and a code property.
func (r *run) jsError(code, message string) goja.Value {
	ctor, _ := r.vm.Get("Error").(*goja.Object)
	e, err := r.vm.New(ctor, r.vm.ToValue(message))
	if err != nil {
		return r.vm.ToValue(message)
	}
	_ = e.Set("code", code)
	return e
}

// callTool is callTool(name, args): a promise settled before it returns,
// by a synchronous host call.
func (r *run) callTool(call goja.FunctionCall) goja.Value {
	p, resolve, reject := r.vm.NewPromise()
	settle := func() goja.Value {
		name := call.Argument(0)
		if goja.IsUndefined(name) || goja.IsNull(name) {
			return r.jsError("bad_request", "callTool: no tool name given")
		}
		r.calls++
		if r.calls > r.lim.maxCalls {
			return r.jsError("max_calls", fmt.Sprintf("callTool(%q): call number %d of this run is over max_calls (%d per run)", name.String(), r.calls, r.lim.maxCalls))
		}
		args := json.RawMessage("{}")
		if a := call.Argument(1); !goja.IsUndefined(a) && !goja.IsNull(a) {
			s, err := r.stringify(goja.Undefined(), a)
			if err != nil || goja.IsUndefined(s) {
				return r.jsError("bad_request", fmt.Sprintf("callTool(%q): the arguments cannot be encoded as JSON", name.String()))
			}
			args = json.RawMessage(s.String())
		}
		out, err := pdk.CallHostTool(name.String(), args)
		if err != nil {
			var he *pdk.HostToolError
			if errors.As(err, &he) {
				return r.jsError(he.Code, fmt.Sprintf("%s: %s", name.String(), he.Message))
			}
			return r.jsError("failed", err.Error())
		}
		v, err := r.parse(goja.Undefined(), r.vm.ToValue(string(out)))
		if err != nil {
			return r.jsError("bad_request", "the host's result is not JSON")
		}
		resolve(v)
		return nil
	}
	if e := settle(); e != nil {
		reject(e)
	}
	return r.vm.ToValue(p)
}

// searchTools is searchTools(query, limit): the host's tool search.
func (r *run) searchTools(call goja.FunctionCall) goja.Value {
	p, resolve, reject := r.vm.NewPromise()
	limit := 0
	if l := call.Argument(1); !goja.IsUndefined(l) {
		limit = int(l.ToInteger())
	}
	out, err := pdk.SearchHostTools(call.Argument(0).String(), limit)
	if err != nil {
		var he *pdk.HostToolError
		if errors.As(err, &he) {
			reject(r.jsError(he.Code, he.Message))
		} else {
			reject(r.jsError("failed", err.Error()))
		}
		return r.vm.ToValue(p)
	}
	v, err := r.parse(goja.Undefined(), r.vm.ToValue(string(out)))
	if err != nil {
		reject(r.jsError("bad_request", "the host's search result is not JSON"))
	} else {
		resolve(v)
	}
	return r.vm.ToValue(p)
}
