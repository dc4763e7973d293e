package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	jsonschema "github.com/toolhost/toolhost/internal/jsonschemav6"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/jsonx"
	"github.com/toolhost/toolhost/transport"
)

// argsOutcome is what a call makes of args through argsJSON and, when the
// call decodes them, decodeJSON: the JSON text and the error.
func argsOutcome(args any, decodes bool) ([]byte, error) {
	raw, err := argsJSON(args, decodes)
	if err == nil && decodes {
		if _, derr := decodeJSON(raw); derr != nil {
			return raw, argsError(args, derr)
		}
	}
	return raw, err
}

// sameAsRawArgs fails t unless argsOutcome agrees with rawArgs, which
// checks the text itself: same text, same error message.
func sameAsRawArgs(t *testing.T, args any) {
	t.Helper()
	want, wantErr := rawArgs(args)
	for _, decodes := range []bool{false, true} {
		got, err := argsOutcome(args, decodes)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("%#v (decodes %v): error %v, rawArgs says %v", args, decodes, err, wantErr)
		}
		if err != nil && !errors.Is(err, ErrInvalidArguments) {
			t.Fatalf("%#v: error %v does not wrap ErrInvalidArguments", args, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%#v (decodes %v): text %q, rawArgs says %q", args, decodes, got, want)
		}
	}
}

func TestArgsJSON(t *testing.T) {
	for _, tc := range []struct {
		args any
		want string // a part of the error; "" for none
	}{
		{nil, ""},
		{json.RawMessage(nil), ""},
		{"", ""},
		{" null ", ""},
		{map[string]any(nil), ""},
		{map[string]any{"text": "hello", "n": 1}, ""},
		{struct {
			A int `json:"a"`
		}{1}, ""},
		{json.RawMessage(" {\"a\": [1, 2]}\n"), ""},
		{[]byte(`{}`), ""},
		{`[1]`, "want a JSON object, got an array"},
		{[]any{1}, "want a JSON object, got an array"},
		{`"x"`, "want a JSON object, got a string"},
		{42, "want a JSON object, got a number"},
		{json.RawMessage(`{"a":`), "want a JSON object, got invalid JSON (unexpected end of JSON input)"},
		{`{"a":1}x`, "want a JSON object, got invalid JSON"},
		{`{"a":1}{}`, "want a JSON object, got invalid JSON"},
		{[]byte(`{bad`), "want a JSON object, got invalid JSON"},
		{map[string]any{"f": func() {}}, "unsupported type"},
	} {
		sameAsRawArgs(t, tc.args)
		_, err := argsOutcome(tc.args, true)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%#v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// FuzzArgsJSON checks that argsJSON with the decoder accepts and refuses
// exactly what rawArgs does, with the same text and message, for arguments
// given as text.
func FuzzArgsJSON(f *testing.F) {
	for _, s := range []string{``, `null`, `{}`, ` {"a":1} `, `[1]`, `"x"`, `{"a":`, `{"a":1}x`, "{\"a\":\"\xff\"}", `{"a":1e999}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sameAsRawArgs(t, s)
		sameAsRawArgs(t, json.RawMessage(s))
	})
}

// sameAsUnmarshalJSON fails t unless decodeJSON decodes s to what
// jsonschema.UnmarshalJSON does, or both refuse it.
func sameAsUnmarshalJSON(t *testing.T, s string) {
	t.Helper()
	got, err := decodeJSON([]byte(s))
	want, wantErr := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%.200q: decodeJSON error %v, jsonschema.UnmarshalJSON %v", s, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%.200q: decodeJSON gives %#v, jsonschema.UnmarshalJSON %#v", s, got, want)
	}
}

var decodeSeeds = []string{
	``, ` `, `{}`, `[]`, ` {"a" : [ 1 , -2.5e+3, 0, -0.0E-1, true, false, null, "x", {}, [] ] } `,
	`{"a":1,"a":2}`, `{"k\u00e9y":"v\n\"\\\/\b\f\r\t\u2028"}`, `"\ud83d\ude00 \ud83d x \udc00"`, "\"\xff\xfe bad\"", "\"\x01\"",
	`{"a":1,}`, `[1,]`, `{"a" 1}`, `{,}`, `{"a":01}`, `-`, `1.`, `1e`, `.5`, `+1`, `1e+`, `tru`, `truex`, `nul`, `[1 2]`,
	`{"a":1}{}`, `{"a":1} x`, "\ufeff{}", `"\u12"`, `"\x"`, `"abc`, `{"a":"b`, `{"a`, `[`, `{`, "\"é\"", `123`, `-0`,
	`1E400`, `{"<&>":"\u003c"}`,
}

func TestDecodeJSON(t *testing.T) {
	for _, s := range decodeSeeds {
		sameAsUnmarshalJSON(t, s)
	}
	// encoding/json's nesting limit.
	for _, n := range []int{maxJSONDepth, maxJSONDepth + 1} {
		sameAsUnmarshalJSON(t, strings.Repeat("[", n)+strings.Repeat("]", n))
		sameAsUnmarshalJSON(t, strings.Repeat(`{"a":`, n)+"1"+strings.Repeat("}", n))
	}
}

// FuzzDecodeJSON checks decodeJSON against jsonschema.UnmarshalJSON, which
// it replaces on the call path: same value or both refuse.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add(s)
	}
	f.Fuzz(sameAsUnmarshalJSON)
}

// failsOver is a backend whose tool "fail" fails (a backend failure, so
// its [tools.NAME] fallback is taken) and whose tool "ok" answers; both
// have an inputSchema, so both check their arguments.
type failsOver struct{ fakeBackend }

func (*failsOver) Connect(context.Context) (*mcp.InitializeResult, error) {
	return &mcp.InitializeResult{ServerInfo: &mcp.Implementation{Name: "failsover", Version: "1"}}, nil
}

func (*failsOver) ListTools(context.Context) ([]*mcp.Tool, error) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}
	return []*mcp.Tool{{Name: "fail", InputSchema: schema}, {Name: "ok", InputSchema: schema}}, nil
}

func (f *failsOver) CallTool(_ context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	if p.Name == "fail" {
		return nil, errors.New("boom")
	}
	return f.res, nil
}

// TestArgsParsedOnce: a tool call's arguments are made into JSON text
// once and decoded once, whoever needs them (the audit record, the
// inputSchema), and a call that falls back shares them with its fallback,
// which checks them against its own schema and audits them without
// decoding them again.
func TestArgsParsedOnce(t *testing.T) {
	decodes := 0
	t.Cleanup(func() { decodeJSON = jsonx.Decode })
	decodeJSON = func(b []byte) (any, error) {
		decodes++
		return jsonx.Decode(b)
	}
	for _, audit := range []bool{false, true} {
		t.Run(map[bool]string{false: "audit=off", true: "audit=on"}[audit], func(t *testing.T) {
			ctx := context.Background()
			cfg, err := config.Parse([]byte("[tools.f__fail]\nfallback = \"f__ok\"\n"), nil)
			if err != nil {
				t.Fatal(err)
			}
			var recs []AuditRecord
			opts := &Options{}
			if audit {
				opts.Audit = func(r AuditRecord) { recs = append(recs, r) }
			}
			h, err := New(ctx, cfg, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fell back"}}}
			if err := h.Add(ctx, "f", func() transport.Transport { return &failsOver{fakeBackend{res: res}} }, nil); err != nil {
				t.Fatal(err)
			}
			decodes = 0
			marshals := 0
			got, err := h.CallTool(ctx, "f__fail", marshalCounter{&marshals})
			if err != nil || got != res {
				t.Fatalf("CallTool: %v %v, want the fallback's result", got, err)
			}
			if marshals != 1 || decodes != 1 {
				t.Errorf("the arguments were encoded %d times and decoded %d times, want once each", marshals, decodes)
			}
			if audit && (len(recs) != 2 || recs[0].ArgsHMAC == "" || recs[0].ArgsHMAC != recs[1].ArgsHMAC || string(recs[0].Args) != `{"text":"hi"}`) {
				t.Errorf("audit records %+v: want the fallback's and the call's, with the same arguments", recs)
			}
		})
	}
}

// marshalCounter encodes to {"text":"hi"}, counting its encodings.
type marshalCounter struct{ n *int }

func (m marshalCounter) MarshalJSON() ([]byte, error) {
	*m.n++
	return []byte(`{"text":"hi"}`), nil
}
