package jsonx

import (
	"errors"
	"testing"
)

// TestObject: the one arguments parser accepts exactly one JSON object with
// space around it, and tells invalid JSON from another kind of value.
func TestObject(t *testing.T) {
	for _, c := range []struct {
		in, out string
		err     error
	}{
		{` {"a":1} `, `{"a":1}`, nil},
		{`{}`, `{}`, nil},
		{`[1]`, `[1]`, ErrNotObject},
		{`null`, `null`, ErrNotObject},
		{`"x"`, `"x"`, ErrNotObject},
		{`{"a":`, `{"a":`, ErrSyntax},
		{`{} {}`, `{} {}`, ErrSyntax},
		{``, ``, ErrSyntax},
	} {
		out, err := Object([]byte(c.in))
		if string(out) != c.out || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("Object(%q) = %q, %v; want %q, %v", c.in, out, err, c.out, c.err)
		}
	}
	if got := Describe(`[1]`); got != "an array" {
		t.Errorf("Describe([1]) = %q", got)
	}
}
