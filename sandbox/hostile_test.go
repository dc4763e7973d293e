package sandbox

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/transport"
)

// TestHostileMix runs every adversarial plugin at once — memory hogs on all
// their instances, file-handle leaks, error floods, an endless catalogue,
// an HTTP flood, a disk filler — while another plugin keeps answering, and
// reports the host's peak RSS growth and the most descriptors it held
// (`go test -run TestHostileMix -v ./sandbox/`).
func TestHostileMix(t *testing.T) {
	if raceEnabled {
		t.Skip("a resident-memory measurement: run it without -race (go test ./sandbox/)")
	}
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
	const mem, n = 64 << 20, 4
	e := newTestEngine(t)
	echo := connect(t, e, "echo", Manifest{}, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, 256<<10)) }))
	defer srv.Close()
	dir, rw := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("x"), 0o644)
	plug := func(name string, cfg Manifest) *Plugin {
		cfg.Memory, cfg.Instances = mem, n
		return connect(t, e, name, cfg, nil)
	}
	hog := plug("hog", Manifest{Timeout: time.Minute})
	fdleak := plug("fdleak", Manifest{Capabilities: Capabilities{Mounts: []Mount{{Guest: "/data", Host: dir}}}})
	flood := plug("errflood", Manifest{MaxOutput: 1 << 20})
	many := plug("manytools", Manifest{})
	net := plug("netout", Manifest{Capabilities: Capabilities{Hosts: []string{"127.0.0.1"}}})
	fill := plug("escape", Manifest{Capabilities: Capabilities{Mounts: []Mount{{Guest: "/out", Host: rw, Mode: MountReadWrite, Quota: 8 << 20}}}})

	runtimeGC()
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	base, baseFDs := procStatus(t, "VmRSS"), openFDs(t)
	maxFDs := baseFDs
	sampled := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		tk := time.NewTicker(5 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-sampled:
				return
			case <-tk.C:
				if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
					maxFDs = max(maxFDs, len(ents))
				}
			}
		}
	}()
	stop := hammer(t, echo)

	call := func(p *Plugin, tool string, args map[string]any) error {
		_, err := p.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		return err
	}
	var wg sync.WaitGroup
	check := func(what string, want error, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); !errors.Is(err, want) {
				t.Errorf("%s: %v, want %v", what, err, want)
			}
		}()
	}
	for i := range n {
		check("hog", ErrMemoryLimit, func() error { return call(hog, "hog", nil) })
		check("fdleak", ErrOpenFiles, func() error {
			return call(fdleak, "open", map[string]any{"path": "/data/f.txt", "count": "100000"})
		})
		check("errflood", transport.ErrOutputTooLarge, func() error {
			return call(flood, "err", map[string]any{"size": strconv.Itoa(2 << 20)})
		})
		check("netout", ErrHTTPLimit, func() error {
			return call(net, "many", map[string]any{"url": srv.URL, "count": "100000"})
		})
		check("fill", ErrQuota, func() error {
			return call(fill, "fill", map[string]any{"path": "/out/f" + strconv.Itoa(i), "size": strconv.Itoa(64 << 20)})
		})
	}
	check("manytools", transport.ErrListLimit, func() error { _, err := many.ListTools(context.Background()); return err })
	wg.Wait()
	answered := stop()
	close(sampled)
	sampler.Wait()

	peak := procStatus(t, "VmHWM")
	t.Logf("hostile mix: host peak RSS %d MiB (grew %d MiB over %d MiB); open files peaked at %d (%d before); echo answered %d calls meanwhile",
		peak>>20, (peak-base)>>20, base>>20, maxFDs, baseFDs, answered)
	// Six plugins × 4 instances × 2 memories (guest + kernel) of 64 MiB is
	// the documented worst case; only the hogs grow theirs.
	if grew := peak - base; grew > 6*n*2*mem {
		t.Errorf("peak RSS grew by %d MiB", grew>>20)
	}
	if maxFDs > baseFDs+n*DefaultMaxOpenFiles+64 {
		t.Errorf("open files peaked at %d", maxFDs)
	}
	if got := callText(t, echo, "echo", map[string]any{"text": "after"}); got != "after" {
		t.Fatalf("echo after the mix: %q", got)
	}
}
