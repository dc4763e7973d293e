package pdk

import (
	"encoding/json"
	"reflect"
	"testing"
)

type bindT struct {
	S     string `json:"s"`
	B     bool
	I     int     `json:"i,omitempty"`
	I8    int8    `json:"i8"`
	U     uint16  `json:"u"`
	F     float64 `json:"f"`
	F32   float32
	Skip  string `json:"-"`
	L     []int  `json:"l"`
	Name  string
	inner int
}

type bindEmbed struct {
	bindT
	X string
}

type bindFold struct {
	A string `json:"a"`
	B string `json:"A"`
}

var bindSeeds = []string{
	`{"s":"hello","B":true,"i":-42,"i8":127,"u":65535,"f":1.5e3,"F32":0.25,"Name":"n"}`,
	`{}`,
	` { "s" : "a\nb \u00e9 \"q\"" , "unknown" : 12 , "other": "x", "n": null, "t": true } `,
	`{"s":null,"i":null}`,
	`{"s":"é"}`,
	`{"s":"\xff"}`,
	`{"S":"upper"}`,
	`{"name":"lower"}`,
	`{"i":1.5}`,
	`{"i":1e2}`,
	`{"i8":128}`,
	`{"u":-1}`,
	`{"f":1e400}`,
	`{"s":1}`,
	`{"B":"true"}`,
	`{"l":[1,2]}`,
	`{"unknown":{"a":1}}`,
	`{"s":"a","s":"b"}`,
	`{"s":"a"} x`,
	`{"s":"a",}`,
	`{"i":01}`,
	`{"i":-}`,
	`{"Skip":"x"}`,
	`{"-":"x"}`,
	`[]`,
	`{"s":"a\u0000"}`,
	`{"s":"tab	"}`,
}

// TestBindFast checks the fast path against encoding/json on the seeds, and
// that it answers the common ones.
func TestBindFast(t *testing.T) {
	fast := 0
	for _, s := range bindSeeds {
		if checkBind(t, []byte(s)) {
			fast++
		}
	}
	if fast < 5 {
		t.Fatalf("the fast path answered %d seeds", fast)
	}
	for _, v := range []any{&bindEmbed{}, &bindFold{}, &map[string]any{}, bindT{}} {
		if bindFast([]byte(`{"s":"x"}`), v) {
			t.Errorf("bindFast into %T must give up", v)
		}
	}
}

func FuzzBind(f *testing.F) {
	for _, s := range bindSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkBind(t, b) })
}

func checkBind(t *testing.T, b []byte) bool {
	t.Helper()
	start := bindT{S: "keep", I: 7, Skip: "skip", Name: "name", inner: 3}
	want, got := start, start
	err := json.Unmarshal(b, &want)
	if !bindFast(b, &got) {
		if !reflect.DeepEqual(got, start) {
			t.Fatalf("bindFast gave up on %q but changed the target: %+v", b, got)
		}
		return false
	}
	if err != nil {
		t.Fatalf("bindFast accepted %q, encoding/json refuses it: %v", b, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("bindFast on %q: %+v, encoding/json: %+v", b, got, want)
	}
	return true
}
