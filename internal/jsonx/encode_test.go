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

// FuzzAppendString: AppendString writes what encoding/json writes without
// HTML escapes, but for \b and \f as \u0008 and \u000c (its output before
// AppendMarshaled shared its loop, which audit records depend on).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "hello", `a"b\c`, `\b\f`, "<script>&amp;</script>", "\b\f\n\r\t\x00\x1f\x7f", "bad \xff utf-8 \u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		enc8 := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		var want []byte
		for i := 0; i < len(enc8); i++ {
			if enc8[i] != '\\' {
				want = append(want, enc8[i])
				continue
			}
			i++
			switch enc8[i] {
			case 'b':
				want = append(want, `\u0008`...)
			case 'f':
				want = append(want, `\u000c`...)
			default:
				want = append(want, '\\', enc8[i])
			}
		}
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}
