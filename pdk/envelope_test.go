package pdk

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// withCap returns a copy of b with extra bytes of spare capacity filled with
// fill, to check that the word-at-a-time reads never use bytes past len.
func withCap(b []byte, extra int, fill byte) []byte {
	c := make([]byte, len(b), len(b)+extra)
	copy(c, b)
	for i := len(b); i < cap(c); i++ {
		c[:cap(c)][i] = fill
	}
	return c
}

// checkEnvelope compares parseEnvelope with encoding/json on in, with and
// without spare capacity. It returns whether the fast path took the input.
func checkEnvelope(t *testing.T, in []byte) bool {
	t.Helper()
	want, err := decodeEnvelope(in)
	var took bool
	for _, b := range [][]byte{withCap(in, 0, 0), withCap(in, 7, '"'), withCap(in, 16, ' '), withCap(in, 9, '\\')} {
		got, ok := parseEnvelope(b)
		if !ok {
			continue
		}
		took = true
		if err != nil {
			t.Fatalf("%q: fast path accepted input encoding/json rejects: %v", in, err)
		}
		for _, f := range []struct {
			name      string
			got, want []byte
		}{{"name", got.name, want.name}, {"arguments", got.args, want.args}, {"_meta", got.meta, want.meta}, {"context", got.ctx, want.ctx}} {
			if !bytes.Equal(f.got, f.want) || (f.got == nil) != (f.want == nil) {
				t.Fatalf("%q: %s = %q, encoding/json gives %q", in, f.name, f.got, f.want)
			}
			if f.got != nil && cap(f.got) != len(f.got) {
				t.Fatalf("%q: %s has spare capacity", in, f.name)
			}
		}
	}
	return took
}

func TestEnvelope(t *testing.T) {
	fast := []string{
		`{"request":{"name":"echo","arguments":{"text":"hello"}},"context":{}}`,
		`{"request":{"name":"echo"}}`,
		`{"request":{"name":""}}`,
		`{"context":{"id":1,"_meta":{"a":[1,2,{"b":null}]}},"request":{"_meta":{"progressToken":"t"},"arguments":{"x":1},"name":"a-b_c"}}`,
		" \t\r\n{ \"request\" : { \"name\" : \"echo\" , \"arguments\" : { \"text\" : \"a b\" } } , \"context\" : null } \n",
		`{"request":{"name":"echo","arguments":null,"_meta":null},"context":null}`,
		`{"request":{"name":"echo","arguments":[]},"context":[1,"2",true,false,null,-0.5e+10]}`,
		`{"request":{"name":"echo","arguments":"str"}}`,
		`{"request":{"name":"echo","arguments":12}}`,
		`{"request":{"name":"echo","arguments":{"s":"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00","u":"héllo wörld ✓ 😀","k\u0065y":1}}}`,
		`{"request":{"name":"echo","arguments":{"text":"<script>&amp;</script>"}}}`,
		`{"request":{"name":"echo","arguments":{"":{},"a":{"b":{"c":[[[[]]]]}}}}}`,
		`{"request":{"name":"echo","other":{"name":"x"},"arguments":{}},"extra":[{"request":1}],"requests":1,"contexts":{}}`,
		`{"request":{"name":"0123456789abcdefghijklmnopqrstuvwxyz"}}`,
		`{"request":{"name":"echo","arguments":{"n":[0,-0,1.5,-2e3,3E-2,1e+9,123456789012345678901234567890]}}}`,
		`{"request":{"name":"echo","arguments":{"bad utf8":"` + "\xff\xfe\x80" + `"}}}`,
		`{"request":{"name":"echo","arguments":{"del":"` + "\x7f" + `"}}}`,
		`{"request":{"name":"echo"},"context":{"id":"` + strings.Repeat("x", 1000) + `"}}`,
		`{"request":{"name":"echo","arguments":` + strings.Repeat("[", 500) + strings.Repeat("]", 500) + `}}`,
	}
	for _, in := range fast {
		if !checkEnvelope(t, []byte(in)) {
			t.Errorf("%q: not taken by the fast path", in)
		}
	}
	slow := []string{
		// Invalid JSON.
		``, ` `, `{`, `}`, `{"request"`, `{"request":`, `{"request":{`, `{"request":{"name":"echo"}`,
		`{"request":{"name":"echo"}}}`, `{"request":{"name":"echo"}} x`, `{"request":{"name":"echo"},}`,
		`{"request":{"name":"echo",}}`, `{"request":{"name":"echo"} "context":{}}`, `{"request" {"name":"echo"}}`,
		`{"request":{"name":"echo","arguments":{"a":01}}}`, `{"request":{"name":"echo","arguments":{"a":1.}}}`,
		`{"request":{"name":"echo","arguments":{"a":.5}}}`, `{"request":{"name":"echo","arguments":{"a":1e}}}`,
		`{"request":{"name":"echo","arguments":{"a":-}}}`, `{"request":{"name":"echo","arguments":{"a":+1}}}`,
		`{"request":{"name":"echo","arguments":{"a":tru}}}`, `{"request":{"name":"echo","arguments":{"a":nul}}}`,
		`{"request":{"name":"echo","arguments":{"a":True}}}`, `{"request":{"name":"echo","arguments":{"a":"\x"}}}`,
		`{"request":{"name":"echo","arguments":{"a":"\u12"}}}`, `{"request":{"name":"echo","arguments":{"a":"\u12G4"}}}`,
		"{\"request\":{\"name\":\"echo\",\"arguments\":{\"a\":\"\x01\"}}}", "{\"request\":{\"name\":\"echo\",\"arguments\":{\"a\":\"\n\"}}}",
		`{"request":{"name":"echo","arguments":{"a" 1}}}`, `{"request":{"name":"echo","arguments":{1:1}}}`,
		`{"request":{"name":"echo","arguments":[1,]}}`, `{"request":{"name":"echo","arguments":[1}}}`,
		`{"request":{"name":"echo","arguments":{"a":1]}}`, `{"request":{"name":"echo","arguments":{"a":1}`,
		`{"request":{"name":"echo","arguments":"abc}}`, "{\"request\":{\"name\":\"echo\"}}\x00",
		`{"request":{"name":"echo","arguments":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}}`,
		// Valid, but for encoding/json.
		`null`, `[]`, `"x"`, `{}`, `{"context":{}}`, `{"request":null}`, `{"request":[]}`, `{"request":"x"}`,
		`{"request":{}}`, `{"request":{"name":null}}`, `{"request":{"name":1}}`, `{"request":{"name":"e\u0063ho"}}`,
		`{"request":{"name":"é"}}`, `{"Request":{"name":"echo"}}`, `{"request":{"Name":"echo"}}`,
		`{"request":{"NAME":"echo"},"request":{"name":"echo"}}`, `{"req\u0075est":{"name":"echo"}}`,
		`{"request":{"name":"echo","ARGUMENTS":{}}}`, `{"request":{"name":"echo","_META":{}}}`, `{"request":{"name":"echo"},"Context":{}}`,
		`{"request":{"name":"echo"},"request":{"name":"echo"}}`, `{"request":{"name":"a","name":"b"}}`,
		`{"request":{"name":"echo","arguments":{},"arguments":{}}}`, `{"request":{"name":"echo","_meta":{},"_meta":{}}}`,
		`{"request":{"name":"echo"},"context":1,"context":2}`, "{\"requeſt\":{\"name\":\"echo\"}}",
		`{"request":{"name":"echo","arguments":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}}`,
	}
	for _, in := range slow {
		if checkEnvelope(t, []byte(in)) {
			t.Errorf("%q: taken by the fast path", in)
		}
	}
}

func FuzzEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"request":{"name":"echo","arguments":{"text":"hello"}},"context":{}}`,
		`{"context":{"id":1,"_meta":{"a":[1,2,{"b":null}]}},"request":{"_meta":{"progressToken":"t"},"arguments":{"x":1},"name":"a"}}`,
		" { \"request\" : { \"name\" : \"echo\" , \"arguments\" : [ \"a\\\"b\" , -1.5e3 ] } } ",
		`{"request":{"name":"echo","arguments":{"s":"\u00e9\n","t":true,"f":false,"n":null}}}`,
		`{"Request":{"NAME":"echo"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkEnvelope(t, in)
	})
}

// FuzzValueEnd checks the validator against json.Valid, in both directions
// (up to the fast path's depth limit).
func FuzzValueEnd(f *testing.F) {
	for _, s := range []string{`{"a":[1,"b",{"c":null}],"d":-0.5e-3}`, `[true,false,"\u00e9\"\\"]`, `"x"`, `12`, ` {} `, `[1,]`, `{"a"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, b := range [][]byte{withCap(in, 0, 0), withCap(in, 8, '"')} {
			end := valueEnd(b, skipWS(b, 0), 0)
			ok := end >= 0 && skipWS(b, end) == len(b)
			valid := json.Valid(in)
			if ok && !valid {
				t.Fatalf("%q: accepted, json.Valid says invalid", in)
			}
			if valid && !ok && depth(in) < maxScanDepth {
				t.Fatalf("%q: rejected, json.Valid says valid", in)
			}
		}
	})
}

// depth is an upper bound of the nesting depth of b.
func depth(b []byte) int {
	return bytes.Count(b, []byte("[")) + bytes.Count(b, []byte("{"))
}

// FuzzEnvelopeParts builds envelopes from fuzzed parts, so that the fast
// path sees many inputs it takes, and checks that it takes the ones it
// should.
func FuzzEnvelopeParts(f *testing.F) {
	f.Add("echo", []byte(`{"text":"hello"}`), []byte(`{"progressToken":1}`), []byte(`{"id":1}`), " ", true)
	f.Add("a", []byte(`[1,{"a":"\u00e9"}]`), []byte(`null`), []byte(`"x"`), "\n\t", false)
	f.Fuzz(func(t *testing.T, name string, args, meta, ctx []byte, ws string, ctxFirst bool) {
		if strings.Trim(ws, " \t\r\n") != "" {
			ws = " "
		}
		q, _ := json.Marshal(name)
		req := `{` + ws + `"name"` + ws + `:` + ws + string(q) + ws + `,"arguments":` + ws + string(args) + ws + `,` + ws + `"_meta":` + string(meta) + `}`
		var in string
		if ctxFirst {
			in = ws + `{"context":` + string(ctx) + `,` + ws + `"request":` + req + `}` + ws
		} else {
			in = `{"request":` + ws + req + `,"context":` + ws + string(ctx) + `}`
		}
		took := checkEnvelope(t, []byte(in))
		plain := string(q) == `"`+name+`"` && !strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r >= 0x7f })
		if plain && json.Valid(args) && json.Valid(meta) && json.Valid(ctx) && depth([]byte(in)) < maxScanDepth-2 && !took {
			t.Fatalf("%q: not taken by the fast path", in)
		}
	})
}
