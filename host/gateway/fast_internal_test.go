package gateway

//lint:file-ignore SA1019 parseCallMaps is fast.go's reading as it was, which names the deprecated log level and roots as fast.go does

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func parseCallMaps(line []byte) *fastCall {
	body, ok := bytes.CutSuffix(line, []byte("}\n"))
	if !ok {
		if body, ok = bytes.CutSuffix(line, []byte("}\r\n")); !ok {
			return nil
		}
	}
	if len(body) == 0 || body[0] != '{' {
		return nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(line, &top) != nil || len(top) != 4 ||
		!bytes.Equal(top["jsonrpc"], rpcVersion) || !bytes.Equal(top["method"], toolsCallMethod) {
		return nil
	}
	fc := &fastCall{}
	switch id := top["id"]; {
	case len(id) > 0 && id[0] == '"':
		var s string
		if json.Unmarshal(id, &s) != nil {
			return nil
		}
		fc.key = "s" + s
		fc.id = marshalID(s) // as the go-sdk writes it: no HTML escapes
	default:
		n, err := strconv.ParseInt(string(id), 10, 64)
		if err != nil || n > maxExactID || n < -maxExactID {
			// The go-sdk decodes a number id as a float64: beyond 2^53
			// it answers with another id. It has those, as before.
			return nil
		}
		fc.key = "n" + strconv.FormatInt(n, 10)
		fc.id = strconv.AppendInt(nil, n, 10)
	}
	var params map[string]json.RawMessage
	if p := top["params"]; len(p) == 0 || p[0] != '{' || json.Unmarshal(p, &params) != nil {
		return nil
	}
	for k := range params {
		if k != "name" && k != "arguments" && k != "_meta" {
			return nil
		}
	}
	if n := params["name"]; len(n) == 0 || n[0] != '"' || json.Unmarshal(n, &fc.name) != nil {
		return nil
	}
	if a, ok := params["arguments"]; ok {
		if len(a) == 0 || a[0] != '{' {
			return nil
		}
		fc.args = a
	}
	if m, ok := params["_meta"]; ok {
		if !parseMetaMaps(fc, m) {
			return nil
		}
	}
	return fc
}

// parseMeta decodes the request's _meta and checks what the go-sdk checks
// of it (validateRequestMeta, go-sdk v1.8.0: the per-request client info
// and capabilities decode into its types); false sends the request to the
// go-sdk.
func parseMetaMaps(fc *fastCall, raw json.RawMessage) bool {
	var fields map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return false
	}
	if _, ok := fields[mcp.MetaKeyLogLevel]; ok {
		return false
	}
	fc.meta = make(mcp.Meta, len(fields))
	for k, v := range fields {
		var x any
		if json.Unmarshal(v, &x) != nil {
			return false
		}
		fc.meta[k] = x
	}
	v, _ := fc.meta[mcp.MetaKeyProtocolVersion].(string)
	if v < protocol2026_07_28 {
		return true
	}
	if !slices.Contains(mcp.SupportedProtocolVersions(), v) {
		return false
	}
	fc.newer = true
	if ci, ok := fields[mcp.MetaKeyClientInfo]; ok {
		var impl *mcp.Implementation
		if json.Unmarshal(ci, &impl) != nil {
			return false
		}
	}
	var caps *struct {
		mcp.ClientCapabilities
		Roots *mcp.RootCapabilities `json:"roots,omitempty"`
	}
	cc, ok := fields[mcp.MetaKeyClientCapabilities]
	return ok && json.Unmarshal(cc, &caps) == nil && caps != nil
}

// FuzzParseCall: parseCall (one pass) takes a line only as parseCallMaps
// (the maps it replaced) does, to the same call: the same in-flight key,
// id as written back, name, arguments, _meta and protocol; it may leave
// to the go-sdk what parseCallMaps took (a member named twice, a key with
// an escape), never the lines a client sends (the seeds, which it must
// take). It never panics. With a connection's metaMemo (shared by every
// input, as by a connection's lines) it takes the same lines to the same
// calls, read once and read again from the memo, and a call's _meta is
// its own: what a handler writes to it is not in the next call's.
func FuzzParseCall(f *testing.F) {
	var memo metaMemo
	meta := `"_meta":{"progressToken":"t","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"roots":{}}}`
	takes := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"s-1","method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"hi"},` + meta + `}}`,
		`{"method":"tools/call","params":{"name":"x"},"id":-9007199254740992,"jsonrpc":"2.0"}`,
		`{ "jsonrpc" : "2.0" , "id" : "\u00e9<&>" , "method" : "tools/call" , "params" : { "name" : "caf\u00e9", "_meta" : { "progressToken" : 7, "k" : [1, {"a": null}] } } }`,
		`{"jsonrpc":"2.0","id":"","method":"tools/call","params":{"name":"","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a\u2028b","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`,
	}
	for _, s := range takes {
		if parseCall([]byte(s+"\n"), nil) == nil {
			f.Errorf("parseCall left %s to the go-sdk", s)
		}
		f.Add(s + "\n")
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"a"}}`,
		`{"jsonrpc":"2.0","\u0069d":1,"method":"tools/call","params":{"name":"a"}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"a"}}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"a"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":[1]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/logLevel":"info"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","extra":1}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}} `,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}]`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}`,
	} {
		f.Add(s + "\n")
	}
	f.Fuzz(func(t *testing.T, line string) {
		got, want := parseCall([]byte(line), nil), parseCallMaps([]byte(line))
		for range 2 {
			m := parseCall([]byte(line), &memo)
			if (m == nil) != (got == nil) {
				t.Fatalf("%q: parseCall with the memo took it: %v, without: %v", line, m != nil, got != nil)
			}
			if m == nil {
				break
			}
			if m.key != got.key || !bytes.Equal(m.id, got.id) || m.name != got.name || !bytes.Equal(m.args, got.args) ||
				m.newer != got.newer || !reflect.DeepEqual(m.meta, got.meta) {
				t.Fatalf("%q:\n with the memo %+v\n without      %+v", line, *m, *got)
			}
			if m.meta != nil {
				m.meta["written-by-a-handler"] = true
			}
		}
		if got == nil {
			return
		}
		if want == nil {
			t.Fatalf("parseCall took %q, which the maps left to the go-sdk", line)
		}
		if got.plainID && checkID(got.id) != nil {
			t.Fatalf("%q: a plain id %s the guard's checkID refuses", line, got.id)
		}
		if got.key != want.key || !bytes.Equal(got.id, want.id) || got.name != want.name || !bytes.Equal(got.args, want.args) ||
			got.newer != want.newer || !reflect.DeepEqual(got.meta, want.meta) {
			t.Fatalf("%q:\n one pass %+v\n maps     %+v", line, *got, *want)
		}
	})
}

// BenchmarkParseCall: a tools/call line as the go-sdk client sends it at
// protocol 2026-07-28 (with its _meta), read by parseCall and by the maps
// it replaced.
func BenchmarkParseCall(b *testing.B) {
	memo := &metaMemo{}
	line := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"v1.0.0"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"arguments":{"text":"hello"},"name":"fx__echo"}}` + "\n")
	for _, v := range []struct {
		name  string
		parse func([]byte) *fastCall
	}{
		{"one-pass", func(l []byte) *fastCall { return parseCall(l, nil) }},
		{"one-pass-memo", func(l []byte) *fastCall { return parseCall(l, memo) }},
		{"maps", parseCallMaps},
	} {
		b.Run("impl="+v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v.parse(line) == nil {
					b.Fatal("not taken")
				}
			}
		})
	}
}

// FuzzAppendPlainResult: appendPlainResult writes what json.Marshal writes
// of the same result (with the _meta it is given), for text results of any
// text, count and error flag; and takes no other shape.
func FuzzAppendPlainResult(f *testing.F) {
	for _, s := range []string{"", "hello", "<b>&amp;</b>", "\b\f\n\x00\x7f \u2028 \xff"} {
		f.Add(s, "second", uint8(1), false, true)
		f.Add(s, "", uint8(3), true, false)
	}
	f.Add("x", "y", uint8(0), false, false)
	g := &Gateway{opts: Options{Version: "v1.2.3 <dev>"}}
	f.Fuzz(func(t *testing.T, a, b string, n uint8, isError, withMeta bool) {
		cp := mcp.CallToolResult{IsError: isError, Content: []mcp.Content{}}
		for i := range int(n % 4) {
			cp.Content = append(cp.Content, &mcp.TextContent{Text: []string{a, b}[i%2]})
		}
		var meta []byte
		want := cp
		if withMeta {
			meta = g.serverInfoMeta()
			want.Meta = mcp.Meta{mcp.MetaKeyServerInfo: g.impl()}
		}
		w, err := json.Marshal(&want)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendPlainResult([]byte("prefix"), &cp, meta)
		if !ok || string(got) != "prefix"+string(w) {
			t.Fatalf("appendPlainResult = %v %s\njson.Marshal        %s", ok, got, w)
		}
		for name, other := range map[string]mcp.CallToolResult{
			"_meta":             {Meta: mcp.Meta{"k": a}, Content: cp.Content},
			"structuredContent": {Content: cp.Content, StructuredContent: map[string]any{}},
			"requestState":      {Content: cp.Content, RequestState: "s"},
			"inputRequests":     {InputRequests: mcp.InputRequestMap{}},
			"null content":      {},
			"image":             {Content: append(slices.Clone(cp.Content), &mcp.ImageContent{MIMEType: "image/png"})},
			"annotated text":    {Content: []mcp.Content{&mcp.TextContent{Text: a, Annotations: &mcp.Annotations{Priority: 1}}}},
			"text with _meta":   {Content: []mcp.Content{&mcp.TextContent{Text: a, Meta: mcp.Meta{"k": 1}}}},
		} {
			if got, ok := appendPlainResult([]byte("prefix"), &other, meta); ok || string(got) != "prefix" {
				t.Fatalf("appendPlainResult took a result with %s: %s", name, got)
			}
		}
	})
}

// TestFastResultResultTypeOnce: a result decoded from an upstream server
// of 2026-07-28 (the go-sdk keeps its resultType in an unexported field,
// which its MarshalJSON writes) is written to a 2026-07-28 session with
// one resultType, the gateway's.
func TestFastResultResultTypeOnce(t *testing.T) {
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcp.NewServer(&mcp.Implementation{Name: "s"}, nil).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := ss.InitializeParams().ProtocolVersion; v < protocol2026_07_28 {
		t.Skipf("the go-sdk client speaks %s", v)
	}
	g := &Gateway{opts: Options{Version: "test"}}
	for _, upstream := range []string{`{"content":[{"type":"text","text":"x"}],"resultType":"complete"}`, `{"content":[{"type":"text","text":"x"}]}`} {
		var res mcp.CallToolResult
		if err := json.Unmarshal([]byte(upstream), &res); err != nil {
			t.Fatal(err)
		}
		for _, newer := range []bool{true, false} {
			body, err := g.fastResult(&res, &fastCall{newer: newer}, ss)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(body), `"resultType"`); n != 1 || !json.Valid(body) {
				t.Errorf("upstream %s, request of 2026-07-28 %v: %s, with %d resultType, want 1", upstream, newer, body, n)
			}
		}
	}
}
