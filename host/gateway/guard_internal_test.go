package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzScanBody: for any body that the go-sdk decodes as one request with
// an id, scanBody either refuses the id or has found that same id, and the
// go-sdk's answer carries it back exactly (an integer as written, a string
// as the same string). scanBody never panics.
func FuzzScanBody(f *testing.F) {
	for _, id := range []string{`1`, `-1`, `0`, `-0`, `1.5`, `1e2`, `9007199254740993`, `9007199254740994`,
		`-9223372036854775808`, `9223372036854775807`, `1e308`, `"a"`, `"\ud800"`, `"\ud83d\ude00"`, `"\u00e9"`,
		`null`, `true`, `{}`, `[]`} {
		f.Add(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		f.Add(`[{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}]`)
	}
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"ping","id":1.5}`)
	f.Add(`{"jsonrpc":"2.0","ID":1.5,"id":1,"method":"ping"}`)
	f.Add(`{"jsonrpc":"2.0","\u0069d":1.5,"method":"ping"}`)
	f.Fuzz(func(t *testing.T, body string) {
		sc, err := scanBody(strings.NewReader(body))
		msg, derr := jsonrpc.DecodeMessage([]byte(body))
		if err != nil || derr != nil || sc.batch {
			return
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.ID.IsValid() {
			return
		}
		if sc.id == nil {
			t.Fatalf("the go-sdk reads id %v in %q; scanBody found none", req.ID.Raw(), body)
		}
		out, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Result: json.RawMessage("{}")})
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ ID json.RawMessage }
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatal(err)
		}
		same := string(back.ID) == string(sc.id)
		if sc.id[0] == '"' {
			var sent, got string
			same = json.Unmarshal(sc.id, &sent) == nil && json.Unmarshal(back.ID, &got) == nil && sent == got
		}
		if !same {
			t.Fatalf("id %s accepted, but the go-sdk answers with id %s (body %q)", sc.id, back.ID, body)
		}
	})
}
