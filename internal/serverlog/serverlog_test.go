package serverlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/internal/testutil"
)

func TestLoggerTeesAtDebugAndScrubs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	d, err := Open(dir, &Options{Scrub: strings.NewReplacer("s3cr3t-value", "[REDACTED]").Replace})
	if err != nil {
		t.Fatal(err)
	}
	var console strings.Builder
	parent := hclog.New(&hclog.LoggerOptions{Output: &console, Level: hclog.Warn})
	l := d.Logger(parent.Named("fx"), "fx")
	l.Debug("stderr", "line", "token=s3cr3t-value")
	l.Named("sandbox").Warn("denied", "path", "/etc/shadow")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	l.Info("after close is dropped")
	lines, err := Tail(dir, "fx", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || !strings.Contains(lines[0], `[DEBUG] fx: stderr: line=token=[REDACTED]`) || !strings.Contains(lines[1], "[WARN]  fx.sandbox: denied") {
		t.Fatalf("file lines %q", lines)
	}
	if strings.Contains(console.String(), "stderr") || !strings.Contains(console.String(), "denied") {
		t.Fatalf("console keeps its own level (warn): %q", console.String())
	}
	for path, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, filepath.Join(dir, "fx.log"): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode(), err, want)
		}
	}
}

func TestOpenRefusesAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(file, "logs"), nil); err == nil || !strings.Contains(err.Error(), "cannot create the log directory") {
		t.Fatalf("Open under a file: %v", err)
	}
}

func TestBadNames(t *testing.T) {
	for _, name := range []string{"", "..", ".", "a/b", "../x", "a.b", strings.Repeat("a", 65)} {
		if _, err := Tail(t.TempDir(), name, 1); !errors.Is(err, ErrBadName) {
			t.Errorf("Tail(%q): %v, want ErrBadName", name, err)
		}
	}
	if _, err := Tail(t.TempDir(), "nothing", 1); !errors.Is(err, ErrNoLogs) {
		t.Errorf("Tail of a missing log: %v, want ErrNoLogs", err)
	}
}

func TestRotationKeepsMaxFiles(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, &Options{MaxSize: 1 << 20, MaxFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	l := d.Logger(hclog.NewNullLogger(), "flood")
	pad := strings.Repeat("x", 1000)
	const n = 6000 // about 6 MiB: five rotations
	for i := range n {
		l.Info("stderr", "i", i, "pad", pad)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		files, _ := Files(dir, "flood")
		return len(files) == 3
	}, "lumberjack keeps log_max_files files")
	files, _ := Files(dir, "flood")
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil || fi.Size() > 1<<20 {
			t.Errorf("%s: %v bytes (%v), over the 1MiB bound", f, fi.Size(), err)
		}
	}
	lines, err := Tail(dir, "flood", 1500) // more than the current file holds (about 65 lines)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1500 || !strings.Contains(lines[1499], fmt.Sprintf("i=%d ", n-1)) || !strings.Contains(lines[0], fmt.Sprintf("i=%d ", n-1500)) {
		t.Fatalf("tail across rotated files: %d lines, first %.60q last %.60q", len(lines), lines[0], lines[len(lines)-1])
	}
}

// hugeFile is a 1 GiB log that is only line ends of "a" lines but for a
// 200 KiB line just before its last three; it counts what is read.
type hugeFile struct {
	size int64
	mu   sync.Mutex
	read int64
}

func (h *hugeFile) ReadAt(p []byte, off int64) (int, error) {
	h.mu.Lock()
	h.read += int64(len(p))
	h.mu.Unlock()
	for i := range p {
		o := off + int64(i)
		switch {
		case o >= h.size:
			return i, io.EOF
		case o >= h.size-400<<10 && o < h.size-200<<10:
			p[i] = 'L' // the long line
		case o%100 == 99:
			p[i] = '\n'
		default:
			p[i] = 'a'
		}
	}
	return len(p), nil
}

func TestTailIsBounded(t *testing.T) {
	h := &hugeFile{size: 1 << 30}
	budget := MaxTailBytes
	lines, err := tailFile(h, h.size, 10000, &budget)
	if err != nil {
		t.Fatal(err)
	}
	if h.read > maxScan+2*MaxTailBytes {
		t.Fatalf("read %d bytes of a 1 GiB file for a tail", h.read)
	}
	var long int
	for _, l := range lines {
		if len(l) > MaxLine+len("…") {
			t.Fatalf("a line of %d bytes: over MaxLine", len(l))
		}
		if strings.HasSuffix(l, "…") {
			long++
		}
	}
	if long != 1 || len(lines) < 2000 {
		t.Fatalf("%d lines, %d cut; want the 200 KiB line cut once", len(lines), long)
	}
}

func TestTailEdges(t *testing.T) {
	for _, tc := range []struct {
		content string
		n       int
		want    []string
	}{
		{"", 5, nil},
		{"a\nb\nc\n", 2, []string{"b", "c"}},
		{"a\nb\nc", 5, []string{"a", "b", "c"}},
		{"\nb\n", 5, []string{"", "b"}},
		{"only\n", 1, []string{"only"}},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "x.log"), []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Tail(dir, "x", tc.n)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Tail(%q, %d) = %q, %v; want %q", tc.content, tc.n, got, err, tc.want)
		}
	}
}

func TestFollowAcrossRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.log")
	if err := os.WriteFile(path, []byte("old1\nold2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, dir, "f", 1, 10*time.Millisecond, func(s string) {
			mu.Lock()
			got = append(got, s)
			mu.Unlock()
		})
	}()
	has := func(want ...string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return fmt.Sprint(got) == fmt.Sprint(want)
		}
	}
	testutil.Eventually(t, 10*time.Second, has("old2"), "the tail first")
	appendTo(t, path, "new1\npart")
	testutil.Eventually(t, 10*time.Second, has("old2", "new1"), "an appended line (a partial one waits)")
	appendTo(t, path, "ial\n"+strings.Repeat("L", MaxLine+10)+"\n")
	// Rotate: rename away and start a new file, as lumberjack does.
	if err := os.Rename(path, filepath.Join(dir, "f-2026-01-01T00-00-00.000.log")); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, "rotated1\n")
	cut := strings.Repeat("L", MaxLine) + "…"
	testutil.Eventually(t, 10*time.Second, has("old2", "new1", "partial", cut, "rotated1"), "lines across the rotation")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// A line whose start is beyond the scan bound (a 100 MiB sparse file with
// no line end) shows as its end.
func TestTailOfAnEndlessLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100 << 20); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("the end\n"), 100<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	lines, err := Tail(dir, "x", 10)
	if err != nil || len(lines) != 1 || !strings.HasPrefix(lines[0], "…") || !strings.HasSuffix(lines[0], "the end") || len(lines[0]) > MaxLine+len("…") {
		t.Fatalf("Tail = %d lines (%.40q), %v; want one line: …, its last bytes", len(lines), lines, err)
	}
}
