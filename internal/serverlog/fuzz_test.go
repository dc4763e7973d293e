package serverlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzTail checks Tail against the obvious reading of a whole file: its
// lines (the last one unterminated or not), the last n, each cut to
// MaxLine.
func FuzzTail(f *testing.F) {
	f.Add("a\nb\nc\n", 2)
	f.Add("\n\n\n", 5)
	f.Add("no newline", 1)
	f.Add("é\n"+strings.Repeat("x", MaxLine+3)+"\nz", 3)
	f.Fuzz(func(t *testing.T, content string, n int) {
		if n < 1 || n > 1000 || len(content) > 1<<20 {
			return
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "x.log"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Tail(dir, "x", n)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		if content != "" && content != "\n" {
			want = strings.Split(strings.TrimSuffix(content, "\n"), "\n")
		}
		if len(want) > n {
			want = want[len(want)-n:]
		}
		for i, l := range want {
			if len(l) > MaxLine {
				want[i] = cutText(l[:MaxLine]) + "…"
			}
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Fatalf("Tail(%q, %d) = %q, want %q", content, n, got, want)
		}
	})
}
