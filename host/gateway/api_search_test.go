package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/gateway"
)

// TestRESTSearch: GET /api/v1/search answers the caller's profile's best
// matches (alice's review profile never finds what it does not allow), and
// a bad query is a 400 that says why; the OpenAPI document has the path.
func TestRESTSearch(t *testing.T) {
	f := start(t, searchConfig)
	base := strings.TrimSuffix(serveLoopback(t, f), "/mcp")
	get := func(tok, query string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/api/v1/search?"+query, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	names := func(body string) []string {
		var r gateway.SearchResult
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		var out []string
		for _, h := range r.Tools {
			if h.InputSchema == nil || h.Score <= 0 {
				t.Errorf("hit without schema or score: %+v", h)
			}
			out = append(out, h.Name)
		}
		return out
	}
	code, body := get("olga-token-01234567890", "q="+url.QueryEscape("sum of two numbers")+"&limit=2")
	if n := names(body); code != 200 || len(n) == 0 || n[0] != "fx__add" || len(n) > 2 {
		t.Fatalf("olga: %d %s", code, body)
	}
	code, body = get("alice-token-0123456789", "q="+url.QueryEscape("big sleep fail echo"))
	if n := names(body); code != 200 || len(n) != 1 || n[0] != "fx__echo" {
		t.Fatalf("alice (review): %d %s", code, body)
	}
	if code, body := get("alice-token-0123456789", "q=zzzz"); code != 200 || body != "{\"tools\":[]}\n" {
		t.Fatalf("no match: %d %q", code, body)
	}
	for _, c := range []struct{ query, want string }{
		{"", "no searchable words"},
		{"q=the", "no searchable words"},
		{"q=add&limit=0", `limit\" is \"0\"`},
		{"q=add&limit=51", `limit\" is \"51\"`},
		{"q=add&limit=x", `limit\" is \"x\"`},
		{"q=add&lmit=1", "unknown query parameter"},
		{"q=" + strings.Repeat("a", 300), "256"},
	} {
		if code, body := get("alice-token-0123456789", c.query); code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("%.40s: %d %s, want 400 with %q", c.query, code, body, c.want)
		}
	}
	raw, err := os.ReadFile("openapi/api.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc.Paths["/api/v1/search"]["get"] == nil {
		t.Fatalf("openapi: no get /api/v1/search (%v)", err)
	}
}
