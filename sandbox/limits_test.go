package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/config"
)

// openFDs counts the test process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// TestOpenFilesCapped: a plugin that opens files in its mount and never
// closes them hits max_open_files (per instance), the call fails with
// ErrOpenFiles, the instance is discarded and its files are closed; the
// plugin and another plugin keep serving.
func TestOpenFilesCapped(t *testing.T) {
	e := newTestEngine(t)
	echo := connect(t, e, "echo", config.Plugin{}, nil)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("x"), 0o644)
	mounts := []config.Mount{{Guest: "/data", Host: dir}}
	p := connect(t, e, "fdleak", config.Plugin{Mounts: mounts, MaxOpenFiles: 16, Instances: 1}, nil)

	base := openFDs(t)
	stop := hammer(t, echo)
	open := func(n int) (string, error) {
		res, err := p.CallTool(context.Background(), &mcp.CallToolParams{Name: "open", Arguments: map[string]any{"path": "/data/f.txt", "count": strconv.Itoa(n)}})
		return resultText(res), err
	}
	// Leaking across calls on one pooled instance counts too.
	if got, err := open(6); err != nil || got != "ok 6" {
		t.Fatalf("open 6: %q %v", got, err)
	}
	if got, err := open(6); err != nil || got != "ok 6" {
		t.Fatalf("open 6 more: %q %v", got, err)
	}
	got, err := open(1000)
	stop()
	t.Logf("open 1000: %q %v", got, err)
	if !errors.Is(err, ErrOpenFiles) || !strings.Contains(err.Error(), "max_open_files") {
		t.Fatalf("open beyond the cap: result %q, error %v; want ErrOpenFiles naming max_open_files", got, err)
	}
	// The discarded instance's files are closed: the host is back near
	// where it was (other goroutines may hold a few descriptors).
	if n := openFDs(t); n > base+8 {
		t.Errorf("host holds %d descriptors after the instance was discarded, %d before", n, base)
	}
	// The plugin keeps serving on a fresh instance.
	if got, err := open(3); err != nil || got != "ok 3" {
		t.Fatalf("open after the fault: %q %v", got, err)
	}
	if got := callText(t, echo, "echo", map[string]any{"text": "after"}); got != "after" {
		t.Fatalf("echo after fault: %q", got)
	}
	// Closing the plugin closes every file its instances hold.
	p.Close()
	if n := openFDs(t); n > base+8 {
		t.Errorf("host holds %d descriptors after Close, %d before", n, base)
	}
}
