package jsonx

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendMarshaled: AppendMarshaled writes what json.Marshal writes.
func FuzzAppendMarshaled(f *testing.F) {
	for _, s := range []string{"", "hello", `a"b\c`, "<script>&amp;</script>", "\b\f\n\r\t\x00\x1f\x7f", "caf\u00e9 \u2028\u2029 \U0001F600", "bad \xff\xfe utf-8 \xe2\x82", "tail\xe2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendMarshaled([]byte("x"), s); !bytes.Equal(got[1:], want) {
			t.Fatalf("AppendMarshaled(%q) = %s, json.Marshal = %s", s, got[1:], want)
		}
	})
}
