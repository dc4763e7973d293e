package transport

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestSSETapFraming: sseTap hands over each event's data once the event
// ends, whatever the line endings (CRLF, LF, CR) and however the body is
// split into reads, joins multi-line data with LF, ignores comments and
// other fields, skips an event over maxTapEvent, and passes every byte
// through unchanged.
func TestSSETapFraming(t *testing.T) {
	long := strings.Repeat("x", maxTapEvent+1)
	body := ": ok\r\n\r\n" +
		"event: message\r\ndata: {\"a\":1}\r\n\r\n" +
		"data:{\"b\":2}\n\n" +
		"id: 7\rdata: one\rdata: two\r\r" +
		"data: " + long + "\n\n" +
		"data: last\n\n"
	want := []string{`{"a":1}`, `{"b":2}`, "one\ntwo", "last"}
	for name, r := range map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
		"half":     iotest.HalfReader,
	} {
		var got []string
		tap := newSSETap(io.NopCloser(r(strings.NewReader(body))), func(b []byte) { got = append(got, string(b)) })
		passed, err := io.ReadAll(tap)
		if err != nil || string(passed) != body {
			t.Fatalf("%s: the body changed on its way through (err %v)", name, err)
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s: tapped %q, want %q", name, got, want)
		}
	}
}
