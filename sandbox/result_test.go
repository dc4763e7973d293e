package sandbox

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var resultSeeds = []string{
	`{"content":[{"type":"text","text":"hello"}]}`,
	`{"content":[{"text":"a\nb \"q\" \u00e9 \ud83d\ude00","type":"text"},{"type":"text","text":""}],"isError":true}`,
	` { "isError" : false , "content" : [ ] } `,
	`{"content":[{"type":"text"}]}`,
	`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`,
	`{"content":[{"type":"text","text":"x","annotations":{"priority":1}}]}`,
	`{"content":[],"structuredContent":{"a":1}}`,
	`{"Content":[{"type":"text","text":"x"}]}`,
	`{"content":[{"type":"text","text":"x"}],"content":[]}`,
	`{"content":[{"type":"text","text":"\xff"}]}`,
	`{"content":null}`,
	`{}`,
	`{"content":[{"type":"text","text":"x"}]}x`,
	`{"content":[{"type":"text","text":"x\u0000"}]}`,
	`{"content":[{"type":"text","text":"{\"a\":1}"}],"structuredContent":{"a":1,"b":[true,null,"s"]}}`,
	`{"content":[{"type":"resource","resource":{"uri":"file:///x","text":"t"}}],"_meta":{"k":"v"}}`,
	`{"content":[{"type":"tool_result","toolUseId":"t","content":[]}]}`,
	`{"content":[{"type":"text","TEXT":"x"}],"structuredContent":{}}`,
}

// TestFastCallToolResult checks the fast decoder against the go-sdk's on
// the seeds: same result whenever the fast path answers.
func TestFastCallToolResult(t *testing.T) {
	fast := 0
	for _, s := range resultSeeds {
		if checkFastResult(t, []byte(s)) {
			fast++
		}
	}
	if fast < 8 {
		t.Fatalf("the fast path answered %d seeds, want the 4 text-only ones and 4 others at least", fast)
	}
}

func FuzzFastCallToolResult(f *testing.F) {
	for _, s := range resultSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkFastResult(t, b) })
}

func checkFastResult(t *testing.T, b []byte) bool {
	t.Helper()
	got, ok := fastCallToolResult(b)
	if !ok {
		return false
	}
	var want mcp.CallToolResult
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("fast path accepted %q, the go-sdk refuses it: %v", b, err)
	}
	if !reflect.DeepEqual(got, &want) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(&want)
		t.Fatalf("fast path on %q: %s, the go-sdk: %s", b, gj, wj)
	}
	return true
}

// TestCallToolInput checks that callToolInput writes the same JSON value as
// the general encoding (p.v2), context id aside.
func TestCallToolInput(t *testing.T) {
	p := &Plugin{}
	decode := func(b []byte) map[string]any {
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		delete(v["context"].(map[string]any), "id")
		return v
	}
	for _, params := range []*mcp.CallToolParams{
		{Name: "echo", Arguments: map[string]any{"text": "hello <&> \u2028", "n": 1.5, "l": []any{1, "x"}}},
		{Name: "echo", Arguments: json.RawMessage(` { "text" : "a<b" , "o": {"k": [1, 2]} } `)},
		{Name: "echo"},
		{Name: "e<cho", Arguments: map[string]any{}},
		{Name: "é", Arguments: json.RawMessage(`{}`)},
		{Name: "echo", Arguments: map[string]any{"x": 1}, Meta: mcp.Meta{"progressToken": "t"}},
		{Name: "echo", Arguments: struct{ A int }{1}},
		{Name: "echo", RequestState: "s"},
	} {
		fast, slow := p.callToolInput(params), p.v2(params, params.Meta)
		if !reflect.DeepEqual(decode(fast), decode(slow)) {
			t.Errorf("%+v:\n fast %s\n slow %s", params, fast, slow)
		}
	}
	if p.callToolInput(&mcp.CallToolParams{Name: "x", Arguments: json.RawMessage(`{`)}) != nil {
		t.Error("invalid raw arguments must fail")
	}
}
