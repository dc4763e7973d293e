package sandbox

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/transport"
)

// hammer calls the echo plugin from one goroutine until stop is called, and
// fails the test if any call fails: a fault in one plugin must not disturb
// another.
func hammer(t *testing.T, echo *Plugin) (stop func() int64) {
	var n atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			res, err := echo.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}})
			if err != nil || resultText(res) != "still here" {
				t.Errorf("echo during fault: %v %v", err, resultText(res))
				return
			}
			n.Add(1)
		}
	}()
	return func() int64 { close(done); wg.Wait(); return n.Load() }
}

func TestFaultsAreContained(t *testing.T) {
	e := newTestEngine(t)
	echo := connect(t, e, "echo", Manifest{}, nil)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte("hello from loopback"))
		case "/redirect-port":
			http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
		case "/redirect-loopback":
			http.Redirect(w, r, "http://127.0.0.2"+r.Host[strings.LastIndex(r.Host, ":"):]+"/ok", http.StatusFound)
		case "/redirect-name":
			http.Redirect(w, r, "http://localhost"+r.Host[strings.LastIndex(r.Host, ":"):]+"/ok", http.StatusFound)
		case "/redirect-outside":
			http.Redirect(w, r, "http://example.com/", http.StatusFound)
		}
	}))
	defer srv.Close()
	hostport := strings.TrimPrefix(srv.URL, "http://")
	port := hostport[strings.LastIndex(hostport, ":")+1:]

	mounted := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(mounted, "ok.txt"), []byte("inside"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644)
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(mounted, "link.txt"))
	os.Symlink(outside, filepath.Join(mounted, "linkdir"))

	type call struct {
		tool string
		args map[string]any
	}
	tests := []struct {
		name    string
		cfg     Manifest
		call    call
		wantErr []error
		wantMsg string // substring of the error or result text
		wantRes string // prefix of the result text, when no error is expected
	}{
		{name: "loop", cfg: Manifest{Timeout: 300 * time.Millisecond},
			call: call{"loop", nil}, wantErr: []error{transport.ErrTimeout, context.DeadlineExceeded}},
		{name: "hog", cfg: Manifest{Capabilities: Capabilities{Memory: 32 << 20}},
			call: call{"hog", nil}, wantErr: []error{ErrMemoryLimit}, wantMsg: "out of memory"},
		{name: "panic", call: call{"panic", map[string]any{"text": "boom"}},
			wantErr: []error{ErrTrap}, wantMsg: "panic: fixture panic: boom"},
		// A 512 KiB result over a 128 KiB max_output: the same rule as the
		// default 4 MiB, at a size that stays quick under -race.
		{name: "bigout", cfg: Manifest{MaxOutput: 128 << 10},
			call: call{"big", map[string]any{"text": "524288"}}, wantErr: []error{transport.ErrOutputTooLarge}},
		{name: "netout/outside", cfg: Manifest{Capabilities: Capabilities{Hosts: []string{"127.0.0.1"}}},
			call: call{"fetch", map[string]any{"url": "http://example.com/"}}, wantErr: []error{ErrHostDenied}, wantMsg: "not in allowed_hosts"},
		{name: "netout/allowed", cfg: Manifest{Capabilities: Capabilities{Hosts: []string{"127.0.0.1"}}},
			call: call{"fetch", map[string]any{"url": srv.URL + "/ok"}}, wantRes: "200 hello from loopback"},
		{name: "netout/loopback-not-explicit", cfg: Manifest{Capabilities: Capabilities{Hosts: []string{"*"}}},
			call: call{"fetch", map[string]any{"url": srv.URL + "/ok"}}, wantErr: []error{ErrHostDenied}, wantMsg: "loopback"},
		{name: "netout/redirect-outside", cfg: Manifest{Capabilities: Capabilities{Hosts: []string{"127.0.0.1"}}},
			call: call{"fetch", map[string]any{"url": srv.URL + "/redirect-outside"}}, wantErr: []error{ErrHostDenied}, wantMsg: "redirect"},
		{name: "netout/redirect-other-port", cfg: Manifest{Capabilities: Capabilities{Hosts: []string{hostport}}},
			call: call{"fetch", map[string]any{"url": srv.URL + "/redirect-port"}}, wantErr: []error{ErrHostDenied}, wantMsg: "redirect"},
		{name: "netout/redirect-other-loopback", cfg: Manifest{Capabilities: Capabilities{Hosts: []string{"127.0.0.1"}}},
			call: call{"fetch", map[string]any{"url": srv.URL + "/redirect-loopback"}}, wantErr: []error{ErrHostDenied}},
		{name: "netout/redirect-other-name", cfg: Manifest{Capabilities: Capabilities{Hosts: []string{"127.0.0.1"}}},
			call: call{"fetch", map[string]any{"url": srv.URL + "/redirect-name"}}, wantErr: []error{ErrHostDenied}},
		{name: "netout/rebinding", cfg: Manifest{Capabilities: Capabilities{Hosts: []string{"*.localhost", "localhost.*", "local*"}}},
			call: call{"fetch", map[string]any{"url": "http://localhost" + hostport[strings.LastIndex(hostport, ":"):] + "/ok"}}, wantErr: []error{ErrHostDenied}, wantMsg: "loopback"},
		{name: "netout/metadata", cfg: Manifest{Capabilities: Capabilities{Hosts: []string{"*"}}},
			call: call{"fetch", map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}}, wantErr: []error{ErrHostDenied}, wantMsg: "cloud metadata"},
		// A literal entry exempts only the host:port it names, and only for
		// a request that matched it: another entry (a glob, any port) that
		// lets the same address through gets the loopback refusal.
		{name: "netout/literal-other-port-by-ip", cfg: Manifest{Capabilities: Capabilities{Hosts: []string{"127.0.0.1:1", "*"}}},
			call: call{"fetch", map[string]any{"url": srv.URL + "/ok"}}, wantErr: []error{ErrHostDenied}, wantMsg: "loopback"},
		{name: "netout/literal-other-port-by-name", cfg: Manifest{Capabilities: Capabilities{Hosts: []string{"127.0.0.1:1", "local*:" + port}}},
			call: call{"fetch", map[string]any{"url": "http://localhost:" + port + "/ok"}}, wantErr: []error{ErrHostDenied}, wantMsg: "loopback"},
		{name: "netout/literal-any-port-glob-name", cfg: Manifest{Capabilities: Capabilities{Hosts: []string{"127.0.0.1", "local*"}}},
			call: call{"fetch", map[string]any{"url": "http://localhost:" + port + "/ok"}}, wantErr: []error{ErrHostDenied}, wantMsg: "loopback"},
		{name: "netout/literal-with-port", cfg: Manifest{Capabilities: Capabilities{Hosts: []string{hostport}}},
			call: call{"fetch", map[string]any{"url": srv.URL + "/ok"}}, wantRes: "200 hello from loopback"},
		{name: "netout/literal-name-with-port", cfg: Manifest{Capabilities: Capabilities{Hosts: []string{"localhost:" + port}}},
			call: call{"fetch", map[string]any{"url": "http://localhost:" + port + "/ok"}}, wantRes: "200 hello from loopback"},
		{name: "netout/no-hosts", call: call{"fetch", map[string]any{"url": srv.URL + "/ok"}}, wantErr: []error{ErrHostDenied}},
		{name: "netout/scheme", cfg: Manifest{Capabilities: Capabilities{Hosts: []string{"*"}}},
			call: call{"fetch", map[string]any{"url": "file:///etc/passwd"}}, wantErr: []error{ErrHostDenied}, wantMsg: "scheme"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx, _, _ := strings.Cut(tt.name, "/")
			p := connect(t, e, fx, tt.cfg, &PluginOptions{Logger: testLogger(t)})
			stop := hammer(t, echo)
			res, err := p.CallTool(context.Background(), &mcp.CallToolParams{Name: tt.call.tool, Arguments: tt.call.args})
			n := stop()
			t.Logf("echo answered %d calls during the fault", n)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if got := resultText(res); !strings.HasPrefix(got, tt.wantRes) {
					t.Fatalf("result %q, want prefix %q", got, tt.wantRes)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; result %q", resultText(res))
			}
			t.Logf("error: %v", err)
			for _, w := range tt.wantErr {
				if !errors.Is(err, w) {
					t.Errorf("error does not wrap %v", w)
				}
			}
			if tt.wantMsg != "" && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not mention %q", err, tt.wantMsg)
			}
			// The faulty plugin keeps serving on a fresh instance.
			if _, err := p.ListTools(context.Background()); err != nil {
				t.Fatalf("ListTools after fault: %v", err)
			}
			// And echo still answers after the fault.
			if got := callText(t, echo, "echo", map[string]any{"text": "after"}); got != "after" {
				t.Fatalf("echo after fault: %q", got)
			}
		})
	}

	t.Run("escape", func(t *testing.T) {
		p := connect(t, e, "escape", Manifest{Capabilities: Capabilities{Mounts: []Mount{{Guest: "/data", Host: mounted}}}}, nil)
		stop := hammer(t, echo)
		defer stop()
		for _, c := range []struct{ tool, path, want string }{
			{"read", "/data/ok.txt", "ok inside"},
			{"read", "/data/../" + filepath.Join(outside, "secret.txt"), "err"},
			{"read", "/data/../../../../etc/passwd", "err"},
			{"read", "../etc/passwd", "err"},
			{"read", filepath.Join(outside, "secret.txt"), "err"},
			{"read", "/etc/passwd", "err"},
			{"read", "/data/link.txt", "err"},
			{"read", "/data/linkdir/secret.txt", "err"},
			{"write", "/data/new.txt", "err"},
			{"write", "/data/ok.txt", "err"},
		} {
			got := callText(t, p, c.tool, map[string]any{"path": c.path})
			t.Logf("%s %s -> %s", c.tool, c.path, got)
			if !strings.HasPrefix(got, c.want) || strings.Contains(got, "secret") && c.want == "err" && !strings.HasPrefix(got, "err") {
				t.Errorf("%s %s = %q, want %q...", c.tool, c.path, got, c.want)
			}
		}
		if _, err := os.Stat(filepath.Join(mounted, "new.txt")); err == nil {
			t.Error("write through a read-only mount succeeded")
		}
		rw := connect(t, e, "escape", Manifest{Name: "escape-rw", Capabilities: Capabilities{Mounts: []Mount{{Guest: "/data", Host: mounted, Mode: MountReadWrite}}}}, nil)
		if got := callText(t, rw, "write", map[string]any{"path": "/data/new.txt"}); got != "ok" {
			t.Errorf("write through rw mount: %q", got)
		}
		if got := callText(t, rw, "write", map[string]any{"path": "/data/linkdir/pwned.txt"}); !strings.HasPrefix(got, "err") {
			t.Errorf("write through symlink out of rw mount: %q", got)
		}
		if _, err := os.Stat(filepath.Join(outside, "pwned.txt")); err == nil {
			t.Error("write escaped the mount")
		}
	})

	// Dangling symlinks: a link in an rw mount to a file outside it that
	// does not exist yet must not be followed on create, open or rename,
	// and readlink must not reveal host paths outside the mount.
	t.Run("escape/dangling", func(t *testing.T) {
		rwdir := t.TempDir()
		out := t.TempDir()
		os.WriteFile(filepath.Join(rwdir, "src.txt"), []byte("src"), 0o644)
		os.WriteFile(filepath.Join(rwdir, "inside.txt"), []byte("inside"), 0o644)
		os.Mkdir(filepath.Join(rwdir, "sub"), 0o755)
		os.Symlink(filepath.Join(out, "created.txt"), filepath.Join(rwdir, "dangle"))
		os.Symlink(filepath.Join(out, "nodir", "x.txt"), filepath.Join(rwdir, "dangle-deep"))
		os.Symlink("../../"+filepath.Base(out)+"/rel.txt", filepath.Join(rwdir, "sub", "dangle-rel"))
		os.Symlink(out, filepath.Join(rwdir, "outdir"))
		os.Symlink(filepath.Join(rwdir, "chain2"), filepath.Join(rwdir, "chain1"))
		os.Symlink(filepath.Join(out, "chained.txt"), filepath.Join(rwdir, "chain2"))
		os.Symlink("inside.txt", filepath.Join(rwdir, "rel-inside"))
		os.Symlink(filepath.Join(rwdir, "inside.txt"), filepath.Join(rwdir, "abs-inside"))
		rw := connect(t, e, "escape", Manifest{Name: "escape-dangling", Capabilities: Capabilities{Mounts: []Mount{{Guest: "/data", Host: rwdir, Mode: MountReadWrite}}}}, nil)
		stop := hammer(t, echo)
		defer stop()
		for _, c := range []struct {
			tool, path, to, want string
		}{
			{"write", "/data/dangle", "", "err"},
			{"create", "/data/dangle", "", "err"},
			{"write", "/data/dangle-deep", "", "err"},
			{"write", "/data/sub/dangle-rel", "", "err"},
			{"write", "/data/chain1", "", "err"},
			{"create", "/data/chain1", "", "err"},
			{"write", "/data/outdir/new.txt", "", "err"},
			{"stat", "/data/dangle", "", "err"},
			{"rename", "/data/src.txt", "/data/outdir/moved.txt", "err"},
			{"rename", "/data/src.txt", "/data/dangle", "err"},
			{"readlink", "/data/dangle", "", "err"},
			{"readlink", "/data/outdir", "", "err"},
			{"readlink", "/data/chain1", "", "err"},
			{"readlink", "/data/rel-inside", "", "ok inside.txt"},
			{"readlink", "/data/abs-inside", "", "ok inside.txt"},
			{"read", "/data/rel-inside", "", "ok inside"},
			{"read", "/data/abs-inside", "", "ok inside"},
			{"write", "/data/fine.txt", "", "ok"},
		} {
			got := callText(t, rw, c.tool, map[string]any{"path": c.path, "to": c.to})
			t.Logf("%s %s %s -> %s", c.tool, c.path, c.to, got)
			if !strings.HasPrefix(got, c.want) {
				t.Errorf("%s %s %s = %q, want %q...", c.tool, c.path, c.to, got, c.want)
			}
			if strings.Contains(got, out) || strings.Contains(got, rwdir) {
				t.Errorf("%s %s revealed a host path: %q", c.tool, c.path, got)
			}
		}
		ents, _ := os.ReadDir(out)
		for _, d := range ents {
			t.Errorf("the plugin created %s outside its mount", filepath.Join(out, d.Name()))
		}
	})
}

// cpuTime returns the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestLoopIsReallyStopped checks that a looping guest stops at its deadline
// rather than keeping a core busy after the call returned.
func TestLoopIsReallyStopped(t *testing.T) {
	e := newTestEngine(t)
	p := connect(t, e, "loop", Manifest{Timeout: 200 * time.Millisecond, Instances: 1}, nil)
	start := time.Now()
	_, err := p.CallTool(context.Background(), &mcp.CallToolParams{Name: "loop"})
	if !errors.Is(err, transport.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrTimeout and DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("call returned after %v, deadline was 200ms", d)
	}
	time.Sleep(100 * time.Millisecond)
	before := cpuTime()
	time.Sleep(500 * time.Millisecond)
	if used := cpuTime() - before; used > 150*time.Millisecond {
		t.Fatalf("process used %v CPU in 500ms after the timeout: the guest is still running", used)
	}

	// A caller's cancel wraps context.Canceled, not ErrTimeout.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = p.CallTool(ctx, &mcp.CallToolParams{Name: "loop"})
	if !errors.Is(err, context.Canceled) || errors.Is(err, transport.ErrTimeout) {
		t.Fatalf("cancel: err = %v, want context.Canceled only", err)
	}

	// Calls beyond the pool wait for a free instance until their deadline.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = p.CallTool(context.Background(), &mcp.CallToolParams{Name: "loop"})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if !errors.Is(err, transport.ErrTimeout) {
			t.Errorf("queued call: %v", err)
		}
	}
}
