package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
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
