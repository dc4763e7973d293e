//go:build !wasip1

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/pdk/pdktest"
)

// On the host the tools see the real file system, so the tests use absolute
// temporary paths where a plugin would see guest mounts such as /data.

func call(t *testing.T, tool string, args map[string]any) *pdktest.Output {
	t.Helper()
	out, err := pdktest.CallTool(tool, args)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReadWriteListSearch(t *testing.T) {
	pdktest.Reset()
	d := t.TempDir()
	out := call(t, "write_file", map[string]any{"path": d + "/a/b/c.txt", "content": "one\ntwo\nthree\n"})
	if out.IsError || !strings.HasPrefix(out.Text, "Created ") {
		t.Fatalf("write: %s", out.Raw)
	}
	if out = call(t, "write_file", map[string]any{"path": d + "/a/b/c.txt", "content": "one\ntwo\nthree\n"}); !strings.HasPrefix(out.Text, "Overwrote ") {
		t.Errorf("overwrite: %s", out.Text)
	}
	if out = call(t, "write_file", map[string]any{"path": d + "/x"}); !out.IsError {
		t.Error("write without content accepted")
	}
	if out = call(t, "read_file", map[string]any{"path": d + "/a/b/c.txt"}); out.Text != "one\ntwo\nthree\n" {
		t.Errorf("read: %q", out.Text)
	}
	if out = call(t, "read_file", map[string]any{"path": d + "/a/b/c.txt", "offset": 2, "limit": 1}); out.Text != "two\n\n[Showing lines 2-2 of 3. Call read_file with offset=3 to continue.]" {
		t.Errorf("read range: %q", out.Text)
	}
	if out = call(t, "read_file", map[string]any{"path": d + "/a/b/c.txt", "offset": 9}); !out.IsError || !strings.Contains(out.Text, "past the end") {
		t.Errorf("offset past end: %q", out.Text)
	}
	if out = call(t, "read_file", map[string]any{"path": d + "/a"}); !out.IsError || !strings.Contains(out.Text, "is a directory") {
		t.Errorf("read dir: %q", out.Text)
	}
	if out = call(t, "read_file", map[string]any{"path": d + "/missing"}); !out.IsError || !strings.Contains(out.Text, "no such file") {
		t.Errorf("missing: %q", out.Text)
	}
	os.WriteFile(filepath.Join(d, "a", "z.go"), nil, 0o644)
	out = call(t, "list_directory", map[string]any{"path": d + "/a"})
	var l struct {
		Entries []entry `json:"entries"`
	}
	if err := json.Unmarshal(out.Structured, &l); err != nil || len(l.Entries) != 2 || l.Entries[0] != (entry{"b", "dir", 0}) || l.Entries[1] != (entry{"z.go", "file", 0}) {
		t.Errorf("list: %s", out.Raw)
	}
	for pattern, want := range map[string]string{
		"*.txt":      `{"matches":["` + d + `/a/b/c.txt"],"truncated":false}`,
		"a/**/*.txt": `{"matches":["` + d + `/a/b/c.txt"],"truncated":false}`,
		"**/z.go":    `{"matches":["` + d + `/a/z.go"],"truncated":false}`,
		"b":          `{"matches":["` + d + `/a/b"],"truncated":false}`,
		"nothing.*":  `{"matches":[],"truncated":false}`,
		"*":          "",
	} {
		out = call(t, "search_files", map[string]any{"path": d, "pattern": pattern, "max_results": 3})
		if want == "" {
			if !strings.Contains(string(out.Structured), `"truncated":true`) {
				t.Errorf("%s: %s", pattern, out.Structured)
			}
			continue
		}
		if string(out.Structured) != want {
			t.Errorf("%s: got %s, want %s", pattern, out.Structured, want)
		}
	}
	if out = call(t, "search_files", map[string]any{"path": d, "pattern": "[x"}); !out.IsError {
		t.Errorf("bad pattern accepted: %s", out.Raw)
	}
}

func TestRoots(t *testing.T) {
	pdktest.Reset()
	d := t.TempDir()
	os.WriteFile(filepath.Join(d, "f.txt"), []byte("hi"), 0o644)
	pdktest.SetConfig(map[string]string{"roots": d})
	if out := call(t, "read_file", map[string]any{"path": "f.txt"}); out.Text != "hi" {
		t.Errorf("relative under root: %s", out.Raw)
	}
	if out := call(t, "read_file", map[string]any{"path": d + "/../etc/passwd"}); !out.IsError || !strings.Contains(out.Text, "outside the mounted directories") {
		t.Errorf("escape: %s", out.Raw)
	}
	pdktest.Reset()
	if out := call(t, "read_file", map[string]any{"path": "f.txt"}); !out.IsError || !strings.Contains(out.Text, "relative") {
		t.Errorf("relative without roots: %s", out.Raw)
	}
}

func TestGlob(t *testing.T) {
	for _, tt := range []struct {
		pattern, name string
		want          bool
	}{
		{"**", "a/b", true},
		{"**/*.go", "x.go", true},
		{"src/**/b", "src/b", true},
		{"src/**/b", "src/x/y/b", true},
		{"src/*/b", "src/x/y/b", false},
		{"*.go", "a/x.go", false},
	} {
		if got := globMatch(tt.pattern, tt.name); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v", tt.pattern, tt.name, got)
		}
	}
}
