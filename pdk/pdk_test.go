//go:build !wasip1

package pdk_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/pdk"
	"github.com/toolhost/toolhost/pdk/pdktest"
)

// The tools below are registered once for the whole test binary, as a
// plugin's init would.
func init() {
	pdk.Register(
		pdk.Tool{
			Name:        "greet",
			Description: "Greets someone.",
			InputSchema: `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`,
			Annotations: &pdk.Annotations{ReadOnlyHint: true, OpenWorldHint: pdk.Bool(false)},
			Handler: func(c *pdk.Call) (*pdk.Result, error) {
				var in struct {
					Name string `json:"name"`
				}
				if err := c.Bind(&in); err != nil {
					return nil, err
				}
				pdk.Logf(pdk.LevelInfo, "greeting %s", in.Name)
				return pdk.Text("hello " + in.Name), nil
			},
		},
		pdk.Tool{
			Name:         "stats",
			OutputSchema: `{"type":"object","properties":{"n":{"type":"integer"}}}`,
			Handler: func(c *pdk.Call) (*pdk.Result, error) {
				return pdk.Structured(map[string]int{"n": 3}), nil
			},
		},
		pdk.Tool{Name: "fail", Handler: func(*pdk.Call) (*pdk.Result, error) { return nil, errors.New("disk on fire") }},
		pdk.Tool{Name: "refuse", Handler: func(*pdk.Call) (*pdk.Result, error) { return pdk.Errorf("no %s", "way"), nil }},
		pdk.Tool{Name: "empty", Handler: func(*pdk.Call) (*pdk.Result, error) { return nil, nil }},
		pdk.Tool{Name: "array", Handler: func(*pdk.Call) (*pdk.Result, error) { return pdk.Structured([]int{1}), nil }},
		pdk.Tool{Name: "mixed", Handler: func(c *pdk.Call) (*pdk.Result, error) {
			return pdk.NewResult(
				pdk.TextContent("see"),
				pdk.ImageContent([]byte{1, 2, 3}, "image/png"),
				pdk.AudioContent([]byte{4}, "audio/wav"),
				pdk.ResourceLink("file:///a", "a", ""),
				pdk.TextResource("file:///b", "text/plain", "bee"),
				pdk.BlobResource("file:///c", "", []byte{5}),
			), nil
		}},
		pdk.Tool{Name: "echo", Handler: func(c *pdk.Call) (*pdk.Result, error) {
			return pdk.Text(string(c.Arguments) + "|" + string(c.Meta) + "|" + string(c.Context)), nil
		}},
		pdk.Tool{Name: "config", Handler: func(c *pdk.Call) (*pdk.Result, error) {
			v, ok := pdk.Config("k")
			if !ok {
				return pdk.Text("unset"), nil
			}
			return pdk.Text(v), nil
		}},
		pdk.Tool{Name: "http", Handler: func(c *pdk.Call) (*pdk.Result, error) {
			var in pdk.Request
			if err := c.Bind(&in); err != nil {
				return nil, err
			}
			resp, err := pdk.HTTP(in)
			if err != nil {
				return nil, err
			}
			return pdk.Structured(map[string]any{"status": resp.Status, "type": resp.Header["content-type"], "body": string(resp.Body)}), nil
		}},
	)
}

func call(t *testing.T, name string, args any) *pdktest.Output {
	t.Helper()
	out, err := pdktest.CallTool(name, args)
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	return out
}

func TestListTools(t *testing.T) {
	out, err := pdktest.ListTools()
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(out, &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Tools) != 10 {
		t.Fatalf("got %d tools: %s", len(l.Tools), out)
	}
	greet := l.Tools[0]
	for k, want := range map[string]string{
		"name":        `"greet"`,
		"description": `"Greets someone."`,
		"inputSchema": `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`,
		"annotations": `{"readOnlyHint":true,"openWorldHint":false}`,
	} {
		if got := string(greet[k]); got != want {
			t.Errorf("greet %s = %s, want %s", k, got, want)
		}
	}
	if _, ok := greet["outputSchema"]; ok {
		t.Error("greet has an outputSchema")
	}
	stats := l.Tools[1]
	if string(stats["inputSchema"]) != `{"type":"object"}` || string(stats["outputSchema"]) != `{"type":"object","properties":{"n":{"type":"integer"}}}` {
		t.Errorf("stats: %s / %s", stats["inputSchema"], stats["outputSchema"])
	}
}

func TestCallTool(t *testing.T) {
	pdktest.Reset()
	tests := []struct {
		name, tool string
		args       any
		want       string // exact wire JSON
	}{
		{"text", "greet", map[string]string{"name": "Ada"}, `{"content":[{"type":"text","text":"hello Ada"}],"isError":false}`},
		{"structured", "stats", nil, `{"content":[{"type":"text","text":"{\"n\":3}"}],"structuredContent":{"n":3},"isError":false}`},
		{"handler error", "fail", nil, `{"content":[{"type":"text","text":"disk on fire"}],"isError":true}`},
		{"Errorf", "refuse", nil, `{"content":[{"type":"text","text":"no way"}],"isError":true}`},
		{"nil result", "empty", nil, `{"content":[],"isError":false}`},
		{"non-object structured", "array", nil, `{"content":[{"type":"text","text":"pdk.Structured: structured content must be a JSON object, got [1]"}],"isError":true}`},
		{"all content types", "mixed", nil, `{"content":[{"type":"text","text":"see"},{"type":"image","data":"AQID","mimeType":"image/png"},{"type":"audio","data":"BA==","mimeType":"audio/wav"},{"type":"resource_link","uri":"file:///a","name":"a"},{"type":"resource","resource":{"uri":"file:///b","mimeType":"text/plain","text":"bee"}},{"type":"resource","resource":{"uri":"file:///c","blob":"BQ=="}}],"isError":false}`},
		{"no arguments become {}", "echo", nil, `{"content":[{"type":"text","text":"{}||{\"id\":\"pdktest\"}"}],"isError":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(call(t, tt.tool, tt.args).Raw); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	// The inputSchema is applied as the host applies it: the handler (and
	// its Bind) never sees arguments that do not conform.
	for args, want := range map[string]string{
		`{"name":7}`:           `{"content":[{"type":"text","text":"invalid arguments for greet: name: got number, want string"}],"isError":true}`,
		`{}`:                   `{"content":[{"type":"text","text":"invalid arguments for greet: (arguments): missing property 'name'"}],"isError":true}`,
		`{"name":["a","b"]}`:   `{"content":[{"type":"text","text":"invalid arguments for greet: name: got array, want string"}],"isError":true}`,
		`{"name":"Ada","x":1}`: `{"content":[{"type":"text","text":"hello Ada"}],"isError":false}`,
	} {
		if out := call(t, "greet", args); string(out.Raw) != want {
			t.Errorf("greet %s:\ngot  %s\nwant %s", args, out.Raw, want)
		}
	}
	if _, err := pdktest.CallTool("greet", `[1]`); err == nil || err.Error() != "invalid tool arguments: not a JSON object: [1]" {
		t.Errorf("array arguments: %v", err)
	}
	if logs := pdktest.Logs(); len(logs) != 2 || logs[0] != "INFO: greeting Ada" {
		t.Errorf("logs = %q", logs)
	}
}

func TestCallToolExportErrors(t *testing.T) {
	for _, tt := range []struct{ input, want string }{
		{`{"request":{"name":"nope"}}`, `unknown tool "nope"`},
		{`not json`, "not valid JSON"},
		{`{"context":{}}`, `no "request" object`},
	} {
		_, err := pdktest.Invoke("call_tool", []byte(tt.input))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.input, err, tt.want)
		}
	}
	out, err := pdktest.Invoke("call_tool", []byte(`{"request":{"name":"echo","arguments":{"a":1},"_meta":{"progressToken":1}},"context":{"id":9}}`))
	if err != nil || string(out) != `{"content":[{"type":"text","text":"{\"a\":1}|{\"progressToken\":1}|{\"id\":9}"}],"isError":false}` {
		t.Errorf("echo: %s %v", out, err)
	}
}

func TestConfig(t *testing.T) {
	pdktest.Reset()
	if got := call(t, "config", nil).Text; got != "unset" {
		t.Errorf("got %q", got)
	}
	pdktest.SetConfig(map[string]string{"k": "v"})
	if got := call(t, "config", nil).Text; got != "v" {
		t.Errorf("got %q", got)
	}
}

func TestLogLevel(t *testing.T) {
	pdktest.Reset()
	pdktest.SetLogLevel(pdk.LevelWarn)
	pdk.Log(pdk.LevelInfo, "dropped")
	pdk.Logf(pdk.LevelError, "kept %d", 1)
	if logs := pdktest.Logs(); len(logs) != 1 || logs[0] != "ERROR: kept 1" {
		t.Errorf("logs = %q", logs)
	}
}

func TestHTTP(t *testing.T) {
	pdktest.Reset()
	pdktest.SetHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusTeapot)
		w.Write([]byte(r.Method + " " + r.URL.Path + " " + r.Header.Get("X-A")))
	}))
	out := call(t, "http", map[string]any{"URL": "http://example.com/x", "Method": "post", "Header": map[string]string{"X-A": "b"}})
	if string(out.Structured) != `{"body":"POST /x b","status":418,"type":"text/plain"}` {
		t.Errorf("got %s", out.Raw)
	}
	out = call(t, "http", map[string]any{"URL": "file:///etc/passwd"})
	if !out.IsError || !strings.Contains(out.Text, "not an absolute http or https URL") {
		t.Errorf("got %s", out.Raw)
	}
}

func TestBind(t *testing.T) {
	var v struct{ A int }
	c := &pdk.Call{Arguments: json.RawMessage(`{"A":"x"}`)}
	if err := c.Bind(&v); !errors.Is(err, pdk.ErrInvalidArguments) {
		t.Errorf("err = %v", err)
	}
	c = &pdk.Call{}
	if err := c.Bind(&v); err != nil {
		t.Errorf("empty arguments: %v", err)
	}
}
