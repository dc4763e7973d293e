//go:build !wasip1

// Package pdktest runs a plugin's registered tools in-process, without Wasm,
// so a plugin can be unit-tested with plain `go test` on the host.
//
// Outside GOOS=wasip1 the pdk talks to a fake kernel instead of Extism;
// pdktest drives it: it sets the configuration, routes pdk.HTTP to an
// http.Handler, collects log lines, and calls exports with the exact JSON the
// host would send. The fake is process-global: tests that use pdktest must not
// run in parallel with each other.
//
//	func TestGreet(t *testing.T) {
//		out, err := pdktest.CallTool("greet", map[string]any{"name": "Ada"})
//		if err != nil {
//			t.Fatal(err)
//		}
//		if out.IsError || out.Text != "hello Ada" {
//			t.Fatalf("got %s", out.Raw)
//		}
//	}
package pdktest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/toolhost/toolhost/pdk" // also registers the list_tools and call_tool handlers
	"github.com/toolhost/toolhost/pdk/internal/abi"
)

var callMu sync.Mutex

// Invoke calls the export name ("list_tools", "call_tool", ...) with input, as
// the host would. It returns the output, or the message the export set with
// error_set as an error when it returned non-zero.
func Invoke(name string, input []byte) ([]byte, error) {
	callMu.Lock()
	defer callMu.Unlock()
	f := abi.Fake
	f.Lock()
	f.In, f.Out, f.Err = append([]byte(nil), input...), nil, ""
	f.Unlock()
	rc := abi.Run(name)
	f.Lock()
	defer f.Unlock()
	if rc != 0 {
		return nil, fmt.Errorf("export %s returned %d: %s", name, rc, f.Err)
	}
	return f.Out, nil
}

// ListTools returns the list_tools output: {"tools":[...]}.
func ListTools() (json.RawMessage, error) {
	return Invoke("list_tools", []byte(`{"context":{}}`))
}

// Output is a decoded CallToolResult.
type Output struct {
	// IsError is the result's isError.
	IsError bool
	// Text is the text of all "text" content blocks, joined by "\n".
	Text string
	// Structured is the structuredContent, or nil.
	Structured json.RawMessage
	// Content is the raw content blocks.
	Content []json.RawMessage
	// Raw is the whole result as the plugin produced it.
	Raw json.RawMessage
}

// CallTool calls tool name with arguments through the call_tool export.
// arguments is encoded with encoding/json, except that a json.RawMessage,
// []byte or string is used as the JSON text itself; nil sends no arguments.
// The error is non-nil only when the export failed (unknown tool, malformed
// input, registration problem) or, as from the host, when arguments is not
// a JSON object; a tool error is Output.IsError.
//
// Like the host, CallTool first applies the tool's inputSchema to the
// arguments: arguments that do not conform give the host's tool error
// result ({"isError":true}, Text "invalid arguments for NAME: FIELD: WHY"),
// and the handler is not called, so a test sees what a model would. See
// checkArguments for the keywords checked (the host checks every JSON
// Schema 2020-12 keyword). Neither fills in a schema's "default"s: a
// missing property is absent from Call.Arguments. To reach a handler with
// arguments the host would refuse (to test Bind itself), use
// Invoke("call_tool", ...).
func CallTool(name string, arguments any) (*Output, error) {
	var args json.RawMessage
	switch a := arguments.(type) {
	case nil:
	case json.RawMessage:
		args = a
	case []byte:
		args = a
	case string:
		args = json.RawMessage(a)
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		args = b
	}
	req := map[string]any{"name": name}
	if args != nil {
		req["arguments"] = args
	}
	if t := bytes.TrimSpace(args); len(t) > 0 && (t[0] != '{' || !json.Valid(t)) {
		return nil, fmt.Errorf("invalid tool arguments: not a JSON object: %.200s", t)
	}
	if schema := inputSchema(name); schema != nil {
		check := args
		if check == nil {
			check = json.RawMessage("{}")
		}
		if msg := checkArguments(name, schema, check); msg != "" {
			type text struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			c, _ := json.Marshal(text{"text", msg})
			raw, _ := json.Marshal(struct {
				Content []json.RawMessage `json:"content"`
				IsError bool              `json:"isError"`
			}{[]json.RawMessage{c}, true})
			return &Output{IsError: true, Text: msg, Content: []json.RawMessage{c}, Raw: raw}, nil
		}
	}
	in, err := json.Marshal(map[string]any{"request": req, "context": map[string]any{"id": "pdktest"}})
	if err != nil {
		return nil, err
	}
	out, err := Invoke("call_tool", in)
	if err != nil {
		return nil, err
	}
	var r struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
		IsError           bool              `json:"isError"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("call_tool output is not a CallToolResult: %w: %s", err, out)
	}
	if r.Content == nil {
		return nil, errors.New(`call_tool output has no "content" array: ` + string(out))
	}
	o := &Output{IsError: r.IsError, Structured: r.StructuredContent, Content: r.Content, Raw: out}
	var texts []string
	for _, c := range r.Content {
		var t struct{ Type, Text string }
		if json.Unmarshal(c, &t) == nil && t.Type == "text" {
			texts = append(texts, t.Text)
		}
	}
	o.Text = strings.Join(texts, "\n")
	return o, nil
}

// inputSchema returns tool name's inputSchema from list_tools, or nil.
func inputSchema(name string) json.RawMessage {
	out, err := ListTools()
	if err != nil {
		return nil
	}
	var l struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(out, &l) != nil {
		return nil
	}
	for _, t := range l.Tools {
		if t.Name == name {
			return t.InputSchema
		}
	}
	return nil
}

// SetConfig replaces the configuration pdk.Config sees.
func SetConfig(m map[string]string) {
	abi.Fake.Lock()
	defer abi.Fake.Unlock()
	abi.Fake.Conf = m
}

// SetHTTP routes pdk.HTTP requests to h (nil removes it; a request without a
// handler panics, as the real kernel traps). Response headers are passed back
// with lower-case names, as the host does when it exposes them.
func SetHTTP(h http.Handler) {
	abi.Fake.Lock()
	defer abi.Fake.Unlock()
	if h == nil {
		abi.Fake.HTTPFun = nil
		return
	}
	abi.Fake.HTTPFun = func(request, body []byte) (int32, []byte, []byte) {
		var r struct {
			URL     string            `json:"url"`
			Method  string            `json:"method"`
			Headers map[string]string `json:"headers"`
		}
		if err := json.Unmarshal(request, &r); err != nil {
			panic("pdktest: kernel HTTP request is not valid JSON: " + err.Error())
		}
		req := httptest.NewRequest(r.Method, r.URL, bytes.NewReader(body))
		for k, v := range r.Headers {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		res := rec.Result()
		defer res.Body.Close()
		rb, _ := io.ReadAll(res.Body)
		hdr := map[string]string{}
		for k, v := range res.Header {
			hdr[strings.ToLower(k)] = strings.Join(v, ",")
		}
		hj, _ := json.Marshal(hdr)
		return int32(res.StatusCode), hj, rb
	}
}

// SetHostTools answers pdk.CallHostTool and pdk.SearchHostTools with f: it
// gets the request JSON ({"op": "call", "name", "arguments"} or {"op":
// "search", "query", "limit"}) and returns the answer JSON ({"result": ...}
// or {"error": {"code", "message"}}), as docs/PLUGIN-ABI.md describes. Nil
// answers as a host that grants no tool calls.
func SetHostTools(f func(request []byte) []byte) {
	abi.Fake.Lock()
	defer abi.Fake.Unlock()
	abi.Fake.ToolsFun = f
}

// SetLogLevel sets the lowest level the fake host keeps; the default keeps all.
func SetLogLevel(level pdk.Level) {
	abi.Fake.Lock()
	defer abi.Fake.Unlock()
	abi.Fake.MinLog = int32(level)
}

// Logs returns the messages logged so far, each as "LEVEL: message".
func Logs() []string {
	abi.Fake.Lock()
	defer abi.Fake.Unlock()
	names := []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR"}
	out := make([]string, 0, len(abi.Fake.Logs))
	for _, l := range abi.Fake.Logs {
		n := "ERROR"
		if l.Level >= 0 && int(l.Level) < len(names) {
			n = names[l.Level]
		}
		out = append(out, n+": "+l.Msg)
	}
	return out
}

// Reset clears the configuration, HTTP handler, logs, vars and log level.
// Registered tools stay.
func Reset() {
	abi.Fake.Lock()
	defer abi.Fake.Unlock()
	abi.Fake.In, abi.Fake.Out, abi.Fake.Err = nil, nil, ""
	abi.Fake.Conf, abi.Fake.Vars, abi.Fake.Logs = nil, nil, nil
	abi.Fake.MinLog, abi.Fake.HTTPFun, abi.Fake.ToolsFun = 0, nil, nil
}
