package host_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/host"
)

// TestAuditResultBytes checks AuditRecord.ResultBytes: for a plugin, the
// size of the output as the guest wrote it (or of the result made from a
// guest's error_set); for a server, the size of the result's JSON encoding.
func TestAuditResultBytes(t *testing.T) {
	var mu sync.Mutex
	var recs []host.AuditRecord
	h, _ := policyHost(t, `
[host]
cache_dir = "@CACHE@"

[servers.fx]
command = "@FIXTURE@"

[plugins.echo]
path = "@ECHO@"
`, &host.Options{Audit: func(r host.AuditRecord) { mu.Lock(); recs = append(recs, r); mu.Unlock() }})
	ctx := context.Background()
	for _, c := range []struct {
		tool string
		args any
		// want is the result's size; 0: that of its JSON encoding.
		want int
	}{
		// The raw-ABI echo plugin writes exactly this text.
		{"echo__echo", map[string]any{"text": "hello"}, len(`{"content":[{"type":"text","text":"hello"}]}`)},
		{"echo__fail", nil, 0},
		{"fx__echo", map[string]any{"text": "hello"}, 0},
	} {
		res, err := h.CallTool(ctx, c.tool, c.args)
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		want := c.want
		if want == 0 {
			enc, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			want = len(enc)
		}
		mu.Lock()
		got := recs[len(recs)-1]
		mu.Unlock()
		if got.Tool != c.tool || got.ResultBytes != want {
			t.Errorf("%s: record %s with result_bytes %d, want %d", c.tool, got.Tool, got.ResultBytes, want)
		}
	}
}
