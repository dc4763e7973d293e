package transport

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOverlongFindID: the JSON-RPC id of a line too long to keep is found
// from its first and last few KiB, whether the server writes it first (the
// go-sdk) or last (the TypeScript SDK), and not taken from inside the
// result.
func TestOverlongFindID(t *testing.T) {
	big := strings.Repeat("x", 3*peekSize)
	for _, c := range []struct {
		line string
		want any
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + big + `"}]}}`, json.Number("7")},
		{`{"result":{"content":[{"type":"text","text":"` + big + `"}]},"jsonrpc":"2.0","id":"a\"b"}`, `a"b`},
		{`{"result":{"content":[{"type":"text","text":"` + big + `"}],"meta":{"id":3}},"jsonrpc":"2.0","id":12}` + "\n", json.Number("12")},
		{`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + big + `","id":4}}`, nil},
	} {
		o := &overlong{}
		for i := 0; i < len(c.line); i += 1000 {
			o.add([]byte(c.line[i:min(i+1000, len(c.line))]))
		}
		if got := o.findID(); got != c.want {
			t.Errorf("id of %.40q…: %#v, want %#v", c.line, got, c.want)
		}
		if o.size != len(c.line) {
			t.Errorf("size %d, want %d", o.size, len(c.line))
		}
	}
}
