package pdk

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// encodeJSON is the reference encoding of r: encoding/json on wireResult, as
// pdk did before the hand-written encoder.
func encodeJSON(r *Result) ([]byte, error) {
	w := wireResult{Content: r.Content, IsError: r.IsError}
	if w.Content == nil {
		w.Content = []Content{}
	}
	if r.StructuredContent != nil {
		b, err := json.Marshal(r.StructuredContent)
		if err != nil {
			return nil, err
		}
		w.StructuredContent = b
	}
	return json.Marshal(w)
}

var stringCases = []string{
	"", "hello", "hello world, a longer text", `"quoted" \back\slash/`, "<script>alert('x') && y</script>",
	"\x00\x01\b\f\n\r\t\x1f\x7f", "héllo wörld ✓ 😀", "\u2028\u2029 x\u2028", "bad \xff\xfe utf8 \xe2\x80", "\xed\xa0\x80",
	strings.Repeat("abcdefg<", 20), strings.Repeat("é", 9),
}

func TestAppendString(t *testing.T) {
	for _, s := range stringCases {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString([]byte("x"), s); !bytes.Equal(got[1:], want) {
			t.Fatalf("%q: got %s, want %s", s, got[1:], want)
		}
	})
}

func TestEncode(t *testing.T) {
	results := []*Result{
		{},
		Text("hello"),
		Text(""),
		Errorf("bad <%s>", "thing"),
		NewResult(TextContent("see"), ImageContent([]byte{1, 2, 3}, "image/png"), AudioContent(nil, "audio/wav"),
			ResourceLink("file:///a", "a", ""), ResourceLink("file:///b?x=<1>", "b", "text/plain"),
			TextResource("file:///b", "text/plain", "bee"), TextResource("u", "", ""), BlobResource("file:///c", "", []byte{5}),
			BlobResource("u", "application/octet-stream", []byte{})),
		Structured(map[string]any{"a": "<&>", "b": []int{1, 2}, "c": "\u2028"}),
		{StructuredContent: json.RawMessage(" {\n \"a\" : [ 1 , 2 ] , \"s\" : \"x y <\u2028> \\\" \" } ")},
		{StructuredContent: json.RawMessage(`{"a":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`)},
		{StructuredContent: struct{ X int }{1}, IsError: true},
		{Content: []Content{TextContent("x")}, StructuredContent: map[string]string{"k": "v"}},
	}
	for _, s := range stringCases {
		results = append(results, Text(s), NewResult(TextResource(s, s, s), ResourceLink(s, s, s)))
	}
	for _, r := range results {
		want, err := encodeJSON(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.encode()
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%+v:\ngot  %s %v\nwant %s", r, got, err, want)
		}
	}
	// Failures keep their encoding/json behaviour.
	if _, err := NewResult(Content{Type: "video"}).encode(); err == nil || !strings.Contains(err.Error(), `unknown content type "video"`) {
		t.Errorf("unknown type: %v", err)
	}
	for _, tt := range []struct {
		r    *Result
		want string
	}{
		{&Result{StructuredContent: json.RawMessage(`[1]`)}, "must be a JSON object, got [1]"},
		{&Result{StructuredContent: json.RawMessage(`{"a":}`)}, "pdk: structuredContent: json: error calling MarshalJSON"},
		{&Result{StructuredContent: json.RawMessage(nil)}, "must be a JSON object, got null"},
		{&Result{StructuredContent: func() {}}, "pdk: structuredContent: json: unsupported type"},
	} {
		out, err := tt.r.encode()
		if err != nil || !strings.Contains(string(out), tt.want) || !strings.Contains(string(out), `"isError":true`) {
			t.Errorf("%v: %s %v", tt.r.StructuredContent, out, err)
		}
	}
}

func FuzzEncode(f *testing.F) {
	f.Add("hello", []byte{1, 2}, "image/png", "file:///x", uint8(0), false, []byte(`{"a":1}`))
	f.Add("<\u2028>", []byte(nil), "", "", uint8(4), true, []byte(" { } "))
	f.Fuzz(func(t *testing.T, text string, data []byte, mime, uri string, kind uint8, isErr bool, structured []byte) {
		var c Content
		switch kind % 6 {
		case 0:
			c = TextContent(text)
		case 1:
			c = ImageContent(data, mime)
		case 2:
			c = AudioContent(data, mime)
		case 3:
			c = ResourceLink(uri, text, mime)
		case 4:
			c = TextResource(uri, mime, text)
		case 5:
			c = BlobResource(uri, mime, data)
		}
		r := &Result{Content: []Content{c, TextContent(uri)}, IsError: isErr}
		if kind&8 != 0 {
			r.StructuredContent = json.RawMessage(structured)
		}
		want, werr := encodeJSON(r)
		got, err := r.encode()
		if err != nil {
			t.Fatal(err)
		}
		if werr == nil && json.Valid(want) && !bytes.Equal(got, want) {
			if b := bytes.TrimSpace(structured); r.StructuredContent == nil || len(b) > 0 && b[0] == '{' {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		}
		if !json.Valid(got) {
			t.Fatalf("invalid output %s", got)
		}
	})
}

// FuzzCompactObject checks compactObject against json.Marshal of a
// json.RawMessage (compact + HTML escaping), which it replaces.
func FuzzCompactObject(f *testing.F) {
	for _, s := range []string{` {"a" : [1, 2], "b": "<x> & \u2028"} `, `{}`, `[]`, `{"a":}`, "{\"a\":\"\xe2\x80\xa8\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := compactObject(raw)
		want, err := json.Marshal(json.RawMessage(raw))
		if ok && (err != nil || !bytes.Equal(got, want)) {
			t.Fatalf("%q: got %s, want %s %v", raw, got, want, err)
		}
		if !ok && err == nil && want[0] == '{' && depth(raw) < maxScanDepth {
			t.Fatalf("%q: not taken", raw)
		}
	})
}
