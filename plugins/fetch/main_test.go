//go:build !wasip1

package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/pdk/pdktest"
)

func TestFetch(t *testing.T) {
	pdktest.Reset()
	pdktest.SetHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><head><title>T</title><script>x()</script></head><body><h2>H</h2><p>a <a href="/b">link</a></p></body></html>`)
		case "/plain":
			fmt.Fprint(w, "UA:"+r.Header.Get("User-Agent"))
		case "/sniff":
			fmt.Fprint(w, "<!DOCTYPE html><p>sniffed</p>")
		case "/bin":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write([]byte{0, 1, 2})
		default:
			http.Error(w, "gone", http.StatusGone)
		}
	}))
	pdktest.SetConfig(map[string]string{"user_agent": "test-agent"})

	for _, tt := range []struct {
		name    string
		args    map[string]any
		isError bool
		want    string
	}{
		{"html to markdown", map[string]any{"url": "http://h.test/page"}, false, "# T\n\n## H\n\na [link](http://h.test/b)"},
		{"raw", map[string]any{"url": "http://h.test/page", "raw": true}, false, `<html><head><title>T</title><script>x()</script>`},
		{"user agent from config", map[string]any{"url": "http://h.test/plain"}, false, "UA:test-agent"},
		{"sniffed html", map[string]any{"url": "http://h.test/sniff"}, false, "sniffed"},
		{"window", map[string]any{"url": "http://h.test/plain", "max_bytes": 3}, false, "UA:\n\n[Content truncated: showed bytes 0-3 of 13. Call fetch again with url=\"http://h.test/plain\" and start_index=3 to continue.]"},
		{"start_index", map[string]any{"url": "http://h.test/plain", "start_index": 3}, false, "test-agent"},
		{"status", map[string]any{"url": "http://h.test/nope"}, true, "fetching http://h.test/nope failed: HTTP 410: gone"},
		{"binary", map[string]any{"url": "http://h.test/bin"}, true, "not text"},
		{"bad url", map[string]any{"url": "/relative"}, true, "absolute http or https URL"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := pdktest.CallTool("fetch", tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if out.IsError != tt.isError || !strings.Contains(out.Text, tt.want) {
				t.Errorf("isError=%v text=%q, want isError=%v containing %q", out.IsError, out.Text, tt.isError, tt.want)
			}
		})
	}
}

func TestWindowRuneBoundary(t *testing.T) {
	got := window("héllo", "u", 0, 2) // 'é' is 2 bytes: cut before it
	if !strings.HasPrefix(got, "h\n") {
		t.Errorf("got %q", got)
	}
}
