//go:build !wasip1

package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/pdk/pdktest"
)

// fakeHost answers callTool like the host: echo returns its arguments as
// text, denied is refused as the pipeline refuses, big returns n bytes.
func fakeHost(calls *int) func([]byte) []byte {
	return func(req []byte) []byte {
		*calls++
		var r struct {
			Op, Name, Query string
			Arguments       json.RawMessage
		}
		_ = json.Unmarshal(req, &r)
		switch {
		case r.Op == "search":
			return []byte(`{"result":[{"name":"fx__echo"}]}`)
		case r.Name == "fx__echo":
			b, _ := json.Marshal(string(r.Arguments))
			return []byte(`{"result":{"content":[{"type":"text","text":` + string(b) + `}],"structuredContent":` + string(r.Arguments) + `}}`)
		case r.Name == "fx__denied":
			return []byte(`{"error":{"code":"failed","message":"tool \"fx__denied\" is not allowed by the policy"}}`)
		}
		return []byte(`{"error":{"code":"failed","message":"unknown tool"}}`)
	}
}

func TestRunCode(t *testing.T) {
	pdktest.Reset()
	var calls int
	pdktest.SetHostTools(fakeHost(&calls))
	pdktest.SetConfig(map[string]string{"max_calls": "3", "max_log": "64", "max_stack": "100"})
	for _, tt := range []struct {
		name, code string
		isError    bool
		want       []string // substrings of the text
	}{
		{"value", `return 1 + 2`, false, []string{"3"}},
		{"undefined", `console.log("hi")`, false, []string{"hi"}},
		{"logs and value", `console.log("a", {b: 1}); console.warn("w"); return {x: [1, "y"]}`, false, []string{"a {\"b\":1}\nWARN: w\n{\"x\":[1,\"y\"]}"}},
		{"await tool", `const r = await tools.fx__echo({msg: "hey"}); return r.structuredContent.msg`, false, []string{`"hey"`}},
		{"callTool", `const r = await callTool("fx__echo", {n: 2}); return r.structuredContent.n * 21`, false, []string{"42"}},
		{"denied caught", `try { await tools.fx__denied({}) } catch (e) { return e.code + " " + e.message }`, false, []string{`"failed fx__denied: tool \"fx__denied\" is not allowed`}},
		{"denied uncaught", `await tools.fx__denied({})`, true, []string{"Uncaught Error: fx__denied: tool", "run_code.js"}},
		{"throw", `function f() { throw new TypeError("bad thing") }\nf()`, true, []string{"Uncaught TypeError: bad thing", "at f (run_code.js"}},
		{"throw string", `throw "plain"`, true, []string{"Uncaught plain"}},
		{"syntax", `return (`, true, []string{"SyntaxError"}},
		{"recursion", `function f(n) { return f(n + 1) + 1 }\nreturn f(0)`, true, []string{"RangeError", "call stack"}},
		{"max_calls", `for (let i = 0; i < 10; i++) await tools.fx__echo({i})`, true, []string{"over max_calls (3 per run)"}},
		{"max_calls caught", `let n = 0; for (let i = 0; i < 10; i++) { try { await tools.fx__echo({i}); n++ } catch (e) { return n + " " + e.code } }`, false, []string{`"3 max_calls"`}},
		{"log cut", `for (let i = 0; i < 100; i++) console.log("line " + i)`, false, []string{"bytes of console output cut: over max_log, 64 bytes"}},
		{"never settles", `await new Promise(() => {})`, true, []string{"never finished"}},
		{"cyclic", `const a = {}; a.a = a; return a`, true, []string{"cannot be encoded as JSON"}},
		{"no searchTools", `return typeof searchTools`, false, []string{`"undefined"`}},
		{"no timers", `return typeof setTimeout`, false, []string{`"undefined"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := pdktest.CallTool("run_code", map[string]any{"code": strings.ReplaceAll(tt.code, `\n`, "\n")})
			if err != nil {
				t.Fatal(err)
			}
			if out.IsError != tt.isError {
				t.Errorf("isError = %v, want %v: %s", out.IsError, tt.isError, out.Text)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.Text, w) {
					t.Errorf("text %q does not contain %q", out.Text, w)
				}
			}
		})
	}
}

func TestRunCodeStructured(t *testing.T) {
	pdktest.Reset()
	out, err := pdktest.CallTool("run_code", map[string]any{"code": `console.log("x"); return {a: 1}`})
	if err != nil || out.IsError {
		t.Fatal(err, out)
	}
	var sc struct {
		Result json.RawMessage `json:"result"`
		Logs   []string        `json:"logs"`
	}
	if err := json.Unmarshal(out.Structured, &sc); err != nil {
		t.Fatal(err)
	}
	if string(sc.Result) != `{"a":1}` || fmt.Sprint(sc.Logs) != "[x]" {
		t.Errorf("structured = %s", out.Structured)
	}
}

func TestRunCodeSearchAndNoGrant(t *testing.T) {
	pdktest.Reset()
	out, err := pdktest.CallTool("run_code", map[string]any{"code": `try { await tools.x({}) } catch (e) { return e.code }`})
	if err != nil || !strings.Contains(out.Text, `"not_granted"`) {
		t.Fatalf("no grant: %v %+v", err, out)
	}
	var calls int
	pdktest.SetHostTools(fakeHost(&calls))
	out, err = pdktest.CallTool("run_code", map[string]any{"code": `return (await searchTools("echo", 3))[0].name`, "search": true})
	if err != nil || !strings.Contains(out.Text, `"fx__echo"`) {
		t.Fatalf("search: %v %+v", err, out)
	}
}
