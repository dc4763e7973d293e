package sandbox

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/transport"
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
	echo := connect(t, e, "echo", Manifest{}, nil)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("x"), 0o644)
	mounts := []Mount{{Guest: "/data", Host: dir}}
	p := connect(t, e, "fdleak", Manifest{Capabilities: Capabilities{Mounts: mounts}, MaxOpenFiles: 16, Instances: 1}, nil)

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

// blockingServer serves /hold: each request signals entered and waits for
// a value on release (or the request's end).
func blockingServer(t *testing.T) (srv *httptest.Server, entered chan struct{}, release chan struct{}) {
	entered = make(chan struct{}, 16)
	release = make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.Write([]byte("released"))
	}))
	t.Cleanup(srv.Close)
	return srv, entered, release
}

// TestQueueTimeIsNotThePluginsFault: a call waiting for a free instance
// does not spend its plugin timeout waiting; a wait that outlasts the
// caller's deadline fails with ErrBusy (and context.DeadlineExceeded), not
// transport.ErrTimeout.
func TestQueueTimeIsNotThePluginsFault(t *testing.T) {
	e := newTestEngine(t)
	srv, entered, release := blockingServer(t)
	const timeout = 4 * time.Second
	p := connect(t, e, "netout", Manifest{Capabilities: Capabilities{Hosts: []string{"127.0.0.1"}}, Instances: 1, Timeout: timeout}, nil)
	fetch := func(ctx context.Context) (string, error) {
		res, err := p.CallTool(ctx, &mcp.CallToolParams{Name: "fetch", Arguments: map[string]any{"url": srv.URL + "/hold"}})
		return resultText(res), err
	}
	type answer struct {
		text string
		err  error
	}
	first := make(chan answer, 1)
	go func() { s, err := fetch(context.Background()); first <- answer{s, err} }()
	<-entered // the only instance is busy

	// Queued callers whose own deadline passes while they wait.
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err := fetch(ctx)
		cancel()
		if !errors.Is(err, ErrBusy) || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, transport.ErrTimeout) {
			t.Fatalf("queued call past the caller's deadline: %v; want ErrBusy and DeadlineExceeded, not transport.ErrTimeout", err)
		}
	}

	// A queued caller without a deadline of its own: it waits longer than
	// half the plugin timeout, then runs for longer than the other half.
	second := make(chan answer, 1)
	go func() { s, err := fetch(context.Background()); second <- answer{s, err} }()
	time.Sleep(timeout * 5 / 8)
	release <- struct{}{} // the first call returns; the second gets the instance
	if a := <-first; a.err != nil || a.text != "200 released" {
		t.Fatalf("first call: %q %v", a.text, a.err)
	}
	<-entered
	time.Sleep(timeout * 5 / 8)
	release <- struct{}{}
	if a := <-second; a.err != nil || a.text != "200 released" {
		t.Fatalf("queued call charged its wait to the plugin timeout: %q %v", a.text, a.err)
	}
}

// TestGuestTextIsBounded: a guest's error_set message is cut to
// MaxErrorText for operations other than call_tool; for call_tool it is an
// error result and counts against max_output; a result over max_output is
// refused before the host copies it.
func TestGuestTextIsBounded(t *testing.T) {
	e := newTestEngine(t)
	echo := connect(t, e, "echo", Manifest{}, nil)
	stop := hammer(t, echo)
	defer stop()
	p := connect(t, e, "errflood", Manifest{MaxOutput: 64 << 10}, nil)
	call := func(tool string, n int) (*mcp.CallToolResult, error) {
		return p.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"size": strconv.Itoa(n)}})
	}
	res, err := call("err", 1000)
	if err != nil || !res.IsError || len(resultText(res)) != 1000 {
		t.Fatalf("small error result: %v %v %d", err, res, len(resultText(res)))
	}
	res, err = call("err", 2<<20)
	if !errors.Is(err, transport.ErrOutputTooLarge) {
		t.Fatalf("2 MiB error result over a 64 KiB max_output: %v, %d bytes of text; want ErrOutputTooLarge", err, len(resultText(res)))
	}
	if n := len(err.Error()); n > MaxErrorText+512 {
		t.Errorf("error text of %d bytes", n)
	}
	if _, err := call("out", 1<<20); !errors.Is(err, transport.ErrOutputTooLarge) {
		t.Fatalf("1 MiB result: %v; want ErrOutputTooLarge", err)
	}
	if got, err := call("out", 10); err != nil || got == nil || resultText(got) != "oooooooooo" {
		t.Fatalf("after the floods: %v %v", got, err)
	}

	// list_tools failing with 2 MiB of error text: Connect's error is cut.
	cfg := Manifest{Name: "errflood-list", Path: fixture(t, "errflood"), Config: map[string]string{"list_error": strconv.Itoa(2 << 20)}}
	lp := e.Plugin(&cfg, nil)
	defer lp.Close()
	_, err = lp.Connect(context.Background())
	if !errors.Is(err, ErrGuest) {
		t.Fatalf("Connect: %.300v; want ErrGuest", err)
	}
	if n := len(err.Error()); n > MaxErrorText+512 {
		t.Errorf("Connect error of %d bytes, want at most about %d", n, MaxErrorText)
	}
}

// TestPluginCatalogueIsBounded: a plugin whose list_tools pages never end,
// or whose pages hold more than transport.MaxTools tools in all, fails
// ListTools with transport.ErrListLimit naming the cap.
func TestPluginCatalogueIsBounded(t *testing.T) {
	e := newTestEngine(t)
	for _, tc := range []struct {
		name   string
		config map[string]string
		want   string
	}{
		{"endless", nil, "pages"},
		{"big-pages", map[string]string{"per_page": "3000", "pages": "5"}, "tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := connect(t, e, "manytools", Manifest{Name: "many-" + tc.name, Config: tc.config}, nil)
			tools, err := p.ListTools(context.Background())
			if !errors.Is(err, transport.ErrListLimit) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ListTools: %d tools, %v; want ErrListLimit naming the %s cap", len(tools), err, tc.want)
			}
		})
	}
}

// procStatus reads a "Vm..." field of /proc/self/status, in bytes.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Skipf("no %s in /proc/self/status", field)
	return 0
}

// TestMemoryBoundHolds: instances × memory is a true bound on what runaway
// guests add to the host's resident memory: every instance of a plugin
// allocating without end, at once, raises the host's peak RSS by little
// more than instances × memory (measured: without reserved mappings,
// wazero's append growth and GC lag made it about 4×).
func TestMemoryBoundHolds(t *testing.T) {
	if raceEnabled {
		t.Skip("a resident-memory measurement: run it without -race (go test ./sandbox/)")
	}
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
	const mem, n = 64 << 20, 4
	e := newTestEngine(t)
	echo := connect(t, e, "echo", Manifest{}, nil)
	p := connect(t, e, "hog", Manifest{Capabilities: Capabilities{Memory: mem}, Instances: n, Timeout: time.Minute}, nil)
	runtimeGC()
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	base := procStatus(t, "VmRSS")
	stop := hammer(t, echo)
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := p.CallTool(context.Background(), &mcp.CallToolParams{Name: "hog"})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; !errors.Is(err, ErrMemoryLimit) {
			t.Errorf("hog: %v, want ErrMemoryLimit", err)
		}
	}
	stop()
	peak := procStatus(t, "VmHWM")
	grew := peak - base
	bound := int64(n*mem) + int64(n*mem)/4 + 96<<20
	t.Logf("peak RSS %d MiB, grew %d MiB with %d instances × %d MiB hogging (bound checked: %d MiB)", peak>>20, grew>>20, n, mem>>20, bound>>20)
	if grew > bound {
		t.Errorf("the host's peak RSS grew by %d MiB, more than %d MiB for %d instances of %d MiB", grew>>20, bound>>20, n, mem>>20)
	}
}

func runtimeGC() { runtime.GC(); debug.FreeOSMemory() }

// TestHTTPPerCallCaps: one call may issue at most max_http_requests
// http_requests and read at most max_http_bytes of response bodies in all;
// beyond, the call fails with ErrHTTPLimit and the plugin keeps serving.
func TestHTTPPerCallCaps(t *testing.T) {
	e := newTestEngine(t)
	echo := connect(t, e, "echo", Manifest{}, nil)
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Write(make([]byte, 256<<10))
	}))
	defer srv.Close()
	p := connect(t, e, "netout", Manifest{Capabilities: Capabilities{Hosts: []string{"127.0.0.1"}}, MaxHTTPRequests: 5, MaxHTTPBytes: 1 << 20}, nil)
	stop := hammer(t, echo)
	defer stop()
	many := func(n int, path string) (string, error) {
		res, err := p.CallTool(context.Background(), &mcp.CallToolParams{Name: "many", Arguments: map[string]any{"url": srv.URL + path, "count": strconv.Itoa(n)}})
		return resultText(res), err
	}
	if got, err := many(4, "/"); err != nil || got != "ok "+strconv.Itoa(4*256<<10) {
		t.Fatalf("4 requests of 256 KiB: %q %v", got, err)
	}
	served.Store(0)
	got, err := many(1000, "/")
	if !errors.Is(err, ErrHTTPLimit) || !strings.Contains(err.Error(), "max_http_bytes") {
		t.Fatalf("1000 requests of 256 KiB: %q %v; want ErrHTTPLimit naming max_http_bytes", got, err)
	}
	if n := served.Load(); n > 5 {
		t.Errorf("the server saw %d requests of that call", n)
	}
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served.Add(1) })
	served.Store(0)
	got, err = many(1000, "/")
	if !errors.Is(err, ErrHTTPLimit) || !strings.Contains(err.Error(), "max_http_requests") {
		t.Fatalf("1000 empty requests: %q %v; want ErrHTTPLimit naming max_http_requests", got, err)
	}
	if n := served.Load(); n != 5 {
		t.Errorf("the server saw %d requests of that call, want 5", n)
	}
	if got, err := many(5, "/"); err != nil || got != "ok 0" {
		t.Fatalf("after the floods: %q %v", got, err)
	}
}

// TestMountQuota: an rw mount with a quota cannot be filled beyond it; the
// call that tries fails with ErrQuota; removing files frees quota.
func TestMountQuota(t *testing.T) {
	e := newTestEngine(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "old.bin"), make([]byte, 256<<10), 0o644)
	p := connect(t, e, "escape", Manifest{Name: "quota", Capabilities: Capabilities{Mounts: []Mount{{Guest: "/out", Host: dir, Mode: MountReadWrite, Quota: 1 << 20}}}}, nil)
	call := func(tool, path string, size int) (string, error) {
		res, err := p.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"path": path, "size": strconv.Itoa(size)}})
		return resultText(res), err
	}
	if got, err := call("fill", "/out/a.bin", 512<<10); err != nil || got != "ok" {
		t.Fatalf("512 KiB into a 1 MiB quota holding 256 KiB: %q %v", got, err)
	}
	// Rewriting a file replaces its bytes rather than adding to them.
	if got, err := call("fill", "/out/a.bin", 512<<10); err != nil || got != "ok" {
		t.Fatalf("rewriting a.bin: %q %v", got, err)
	}
	got, err := call("fill", "/out/b.bin", 100<<20)
	if !errors.Is(err, ErrQuota) || !strings.Contains(err.Error(), "mount_quota") {
		t.Fatalf("100 MiB into the rest of the quota: %q %v; want ErrQuota naming mount_quota", got, err)
	}
	var total int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, _ error) error {
		if fi != nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
		return nil
	})
	if total > 1<<20 {
		t.Errorf("the mount holds %d bytes, over its 1 MiB quota", total)
	}
	for _, f := range []string{"/out/b.bin", "/out/old.bin"} {
		if got, err := call("remove", f, 0); err != nil || got != "ok" {
			t.Fatalf("remove %s: %q %v", f, got, err)
		}
	}
	if got, err := call("fill", "/out/c.bin", 400<<10); err != nil || got != "ok" {
		t.Fatalf("after removing files: %q %v", got, err)
	}
}
