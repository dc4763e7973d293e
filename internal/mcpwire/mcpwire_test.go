package mcpwire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// corpus is result text of every content kind, and hostile text.
var corpus = []string{
	`{"content":[{"type":"text","text":"hello"}]}`,
	`{"content":[{"type":"text","text":"hello","_meta":{"a":1},"annotations":{"audience":["user"],"priority":0.5,"lastModified":"2025-01-01T00:00:00Z"}}],"isError":true}`,
	`{"content":[{"type":"image","data":"aGVsbG8=","mimeType":"image/png"}]}`,
	`{"content":[{"type":"audio","data":"aGVsbG8=","mimeType":"audio/wav","annotations":{"priority":1}}]}`,
	`{"content":[{"type":"resource_link","uri":"file:///x","name":"x","title":"X","description":"d","mimeType":"text/plain","size":12,"icons":[{"src":"https://x/i.png","mimeType":"image/png","sizes":["16x16"],"theme":"dark"}]}]}`,
	`{"content":[{"type":"resource","resource":{"uri":"file:///x","mimeType":"text/plain","text":"body","_meta":{"k":"v"}}}]}`,
	`{"content":[{"type":"resource","resource":{"uri":"file:///b","blob":"AAEC"}}]}`,
	`{"content":[{"type":"tool_use","id":"t1","name":"n","input":{"a":[1,2,{"b":null}]}}]}`,
	`{"content":[{"type":"tool_result","toolUseId":"t1","content":[{"type":"text","text":"x"}]}]}`,
	`{"content":[],"structuredContent":{"a":1,"b":[true,false,null,"s",1.5e3],"c":{"d":{}}}}`,
	`{"structuredContent":{"x":1}}`,
	`{"content":[{"type":"text","text":"x"}],"_meta":{"progressToken":"p","io.modelcontextprotocol/x":{"y":2}}}`,
	`{"content":[{"type":"text","text":"x"}],"resultType":"complete"}`,
	`{"content":[],"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object"}}}},"requestState":"s"}`,
	`{"content":[],"resultType":"input_required","requestState":"s"}`,
	`{"content":[],"resultType":"weird"}`,
	`{"content":[{"type":"unknown","text":"x"}]}`,
	`{"content":[null]}`,
	`{"content":null}`,
	`null`,
	`{}`,
	`[]`,
	`"x"`,
	`{"content":[{"type":"text","text":"\u00e9\ud83d\ude00\n\"q\""}]}`,
	`{"content":[{"type":"text","TEXT":"upper"}]}`,
	`{"Content":[{"type":"text","text":"x"}]}`,
	`{"content":[{"type":"text","te\u0078t":"escaped key"}]}`,
	`{"content":[{"type":"text","text":"a","text":"b"}]}`,
	`{"content":[{"type":"text","text":"a"}],"content":[{"type":"image","data":"AA=="}]}`,
	`{"content":[{"type":"text","text":"a","unknownKey":{"deep":[1,2,3]}}],"extra":1}`,
	`{"content":[{"type":"text","text":"` + "\xff\xfe" + `"}]}`,
	`{"content":[{"type":"image","data":"not base64!"}]}`,
	`{"content":[{"type":"image","data":"aGVsbG8"}]}`,
	`{"content":[{"type":"resource_link","uri":"u","name":"n","size":1.5}]}`,
	`{"content":[{"type":"resource_link","uri":"u","name":"n","size":99999999999999999999}]}`,
	`{"content":[{"type":"text","text":"x"}],"structuredContent":1e999}`,
	`{"content":[{"type":"text","text":"x"}],"isError":"yes"}`,
	`{"content":{"type":"text","text":"single"}}`,
	`{"content":[{"type":"text","text":"x"}]} trailing`,
	`{"content":[{"type":"text","text":"x"}`,
	`{"content":[{"type":"text","text":"x","_meta":{"Text":"user data key"}}]}`,
	`{"content":[{"type":"text","text":"x"}],"structuredContent":{"K":"kelvin-free","\u212a":"kelvin"}}`,
}

func init() {
	corpus = append(corpus,
		`{"content":[],"structuredContent":`+strings.Repeat("[", 1001)+strings.Repeat("]", 1001)+`}`,
		`{"content":[],"structuredContent":`+strings.Repeat("[", 999)+strings.Repeat("]", 999)+`}`,
		`{"content":[{"type":"text","text":"`+strings.Repeat("x", 1<<20)+`"}]}`,
		`{"content":[`+strings.Repeat(`{"type":"text","text":"x"},`, 5000)+`{"type":"text","text":"y"}]}`,
	)
}

// oracle decodes raw as the go-sdk's client does.
func oracle(raw []byte) (*mcp.CallToolResult, error) {
	r := new(mcp.CallToolResult)
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, err
	}
	return r, nil
}

func same(t *testing.T, raw []byte) {
	t.Helper()
	want, werr := oracle(raw)
	got, gerr := DecodeCallToolResult(raw)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%.200q: go-sdk error %v, mcpwire error %v", raw, werr, gerr)
	}
	if werr != nil {
		if werr.Error() != gerr.Error() {
			t.Fatalf("%.200q: go-sdk error %q, mcpwire error %q", raw, werr, gerr)
		}
		return
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("%.200q:\ngo-sdk  %#v\nmcpwire %#v", raw, want, got)
	}
	if want.NeedsInput() != got.NeedsInput() {
		t.Fatalf("%.200q: NeedsInput differs", raw)
	}
}

// TestDecodeMatchesGoSDK: every content kind, and hostile text (depth,
// huge strings, unknown types, case-folded and escaped keys, duplicates,
// invalid UTF-8 and base64), decode to exactly what the go-sdk gives.
func TestDecodeMatchesGoSDK(t *testing.T) {
	for i, c := range corpus {
		t.Run(fmt.Sprint(i), func(t *testing.T) { same(t, []byte(c)) })
	}
}

// TestDecodeFastTakesCommonKinds: the kinds a server sends are decoded
// without the go-sdk.
func TestDecodeFastTakesCommonKinds(t *testing.T) {
	for _, c := range corpus[:8] {
		if _, ok := DecodeFast([]byte(c)); !ok {
			t.Errorf("DecodeFast refused %s", c)
		}
	}
	for _, c := range []string{corpus[9], corpus[11], corpus[12]} {
		if _, ok := DecodeFast([]byte(c)); !ok {
			t.Errorf("DecodeFast refused %s", c)
		}
	}
}

func FuzzDecodeCallToolResult(f *testing.F) {
	for _, c := range corpus {
		if len(c) < 4096 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) { same(t, raw) })
}

func TestParseResponse(t *testing.T) {
	for _, tc := range []struct {
		line              string
		ok                bool
		id, result, error string
	}{
		{`{"jsonrpc":"2.0","id":"th-1","result":{"content":[]}}`, true, `"th-1"`, `{"content":[]}`, ``},
		{` { "result" : {"a":[1,{"b":"}"}]} , "id" : 7 , "jsonrpc":"2.0"} `, true, `7`, `{"a":[1,{"b":"}"}]}`, ``},
		{`{"jsonrpc":"2.0","id":"th-1","error":{"code":-1,"message":"m"}}`, true, `"th-1"`, ``, `{"code":-1,"message":"m"}`},
		{`{"jsonrpc":"2.0","id":"th-1","result":null}`, true, `"th-1"`, ``, ``},
		{`{"jsonrpc":"2.0","id":"th-1","method":"x"}`, false, ``, ``, ``},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, false, ``, ``, ``},
		{`[{"jsonrpc":"2.0","id":"th-1","result":{}}]`, false, ``, ``, ``},
		{`{"jsonrpc":"2.0","id":"th-1","result":{}} x`, false, ``, ``, ``},
		{`{"id":"th-1","result":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}`, true, `"th-1"`, strings.Repeat("[", 2000) + strings.Repeat("]", 2000), ``},
		{`{"id":"th-1","result":{"a":"]}"}}`, true, `"th-1"`, `{"a":"]}"}`, ``},
		{`{"id":"th-1","result":{"a":1`, false, ``, ``, ``},
		{`{"id":"th-\"1","result":1}`, true, `"th-\"1"`, `1`, ``},
		{`{}`, false, ``, ``, ``},
		{``, false, ``, ``, ``},
	} {
		r, ok := ParseResponse([]byte(tc.line))
		if ok != tc.ok {
			t.Errorf("%.80s: ok %v", tc.line, ok)
			continue
		}
		if ok && (string(r.ID) != tc.id || string(r.Result) != tc.result || string(r.Error) != tc.error) {
			t.Errorf("%.80s: got id %s result %s error %s", tc.line, r.ID, r.Result, r.Error)
		}
	}
}

func TestEncodeCallRequest(t *testing.T) {
	p := &mcp.CallToolParams{Name: "echo", Meta: mcp.Meta{"progressToken": "p"}}
	req, err := EncodeCallRequest("th-9", p)
	if err != nil {
		t.Fatal(err)
	}
	defer req.Free()
	line := req.Bytes()
	if line[len(line)-1] != '\n' {
		t.Fatalf("no newline: %q", line)
	}
	var m struct {
		JSONRPC, ID, Method string
		Params              mcp.CallToolParams
	}
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	if m.JSONRPC != "2.0" || m.ID != "th-9" || m.Method != "tools/call" || m.Params.Name != "echo" ||
		!reflect.DeepEqual(m.Params.Arguments, map[string]any{}) || m.Params.Meta["progressToken"] != "p" {
		t.Fatalf("%s", line)
	}
	if p.Arguments != nil {
		t.Fatal("p modified")
	}
	if _, err := EncodeCallRequest("th-1", &mcp.CallToolParams{Name: "x", Arguments: map[string]any{"c": make(chan int)}}); err == nil {
		t.Fatal("unencodable arguments accepted")
	}
}

func BenchmarkDecode(b *testing.B) {
	raw := []byte(`{"content":[{"type":"text","text":"hello"}],"structuredContent":{"a":1,"b":"x"},"resultType":"complete"}`)
	b.Run("impl=mcpwire", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeCallToolResult(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=go-sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := oracle(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
