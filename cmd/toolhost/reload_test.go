package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
)

// The reloader in process, on a Host of fixture servers (the end-to-end
// tests through a real serve are host/gateway's reload_serve_test.go).

const reloadOne = `
[servers.fx]
command = "@FIXTURE@"
startup_timeout = "5m"
`

const reloadTwo = reloadOne + `
[servers.fx2]
command = "@FIXTURE@"
startup_timeout = "5m"
`

// newTestReloader starts a Host on the configuration file path and
// returns a reloader of it, logging into log (at Debug).
func newTestReloader(t *testing.T, path string, log *testutil.Buffer) *reloader {
	t.Helper()
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "toolhost", Level: hclog.Debug, Output: log})
	h, err := host.New(context.Background(), cfg, &host.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return newReloader(path, h, logger.Named("reload"))
}

func backends(h *host.Host) []string {
	var out []string
	for _, st := range h.Status() {
		out = append(out, st.Name)
	}
	return out
}

func rewrite(t *testing.T, path, src string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(strings.ReplaceAll(src, "@FIXTURE@", testutil.Fixture(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestReloaderRefuses: a file that is invalid, missing, or not a regular
// file (a FIFO, which would block a read forever) is refused with a
// config.ErrorList naming the file and, for an invalid one, every problem
// with its line; the Host keeps what it ran.
func TestReloaderRefuses(t *testing.T) {
	path := writeConfig(t, reloadOne)
	var log testutil.Buffer
	r := newTestReloader(t, path, &log)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := r.reload(ctx)
	var list config.ErrorList
	if !errors.As(err, &list) || len(list) != 1 || list[0].File != path || !strings.Contains(list[0].Msg, "not a regular file") {
		t.Errorf("a FIFO: %v", err)
	}

	os.Remove(path)
	_, err = r.reload(ctx)
	if !errors.As(err, &list) || len(list) != 1 || list[0].File != path || !strings.Contains(list[0].Msg, "cannot read the configuration file: no such file") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}

	rewrite(t, path, "[servers.fx]\ncommand = \"@FIXTURE@\"\nbogus = 1\n\n[servers.fx2]\ncommand = 2\n")
	_, err = r.reload(ctx)
	if !errors.As(err, &list) || len(list) != 2 || list[0].Line != 3 || list[0].Key != "servers.fx.bogus" || list[1].Line != 6 || list[1].Key != "servers.fx2.command" {
		t.Errorf("an invalid file: %v", err)
	}
	if got := backends(r.h); !slices.Equal(got, []string{"fx"}) {
		t.Errorf("a refused reload changed the backends: %v", got)
	}

	r.reloadAndLog(ctx, "test")
	for _, want := range []string{"reload refused: the configuration is invalid; nothing was changed", "line=3 key=servers.fx.bogus", "line=6 key=servers.fx2.command"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}
}

// TestReloaderConcurrent: reloads asked for at once run one at a time:
// each sees the file and the Host as the one before left them, so exactly
// one reports the new backend added, and the others report it unchanged.
func TestReloaderConcurrent(t *testing.T) {
	path := writeConfig(t, reloadOne)
	var log testutil.Buffer
	r := newTestReloader(t, path, &log)
	rewrite(t, path, reloadTwo)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu             sync.Mutex
		added, unchang int
		wg             sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			rep, err := r.reload(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Error(err)
			}
			if slices.Equal(rep.Added, []string{"fx2"}) {
				added++
			}
			if slices.Equal(rep.Unchanged, []string{"fx", "fx2"}) {
				unchang++
			}
		})
	}
	wg.Wait()
	if added != 1 || unchang != 7 {
		t.Errorf("8 concurrent reloads: %d added fx2, %d saw it unchanged; want 1 and 7", added, unchang)
	}
}

// TestReloaderNotApplied: a reload that changes [code_mode] and [store]
// (kept as they were at start until serve restarts) says so in its report
// and in a warning, and printReport prints it; a reload that changes
// neither names nothing, even when other lines move.
func TestReloaderNotApplied(t *testing.T) {
	path := writeConfig(t, reloadOne)
	var log testutil.Buffer
	r := newTestReloader(t, path, &log)
	ctx := context.Background()
	rewrite(t, path, "# a comment moves every line\n"+reloadOne)
	if rep, err := r.reload(ctx); err != nil || len(rep.NotApplied) != 0 {
		t.Fatalf("reload without a change: %+v %v", rep, err)
	}
	rewrite(t, path, reloadOne+"\n[code_mode]\ntimeout = \"5s\"\n\n[store]\nqueue_size = 10\n")
	rep, err := r.reload(ctx)
	if err != nil || !slices.Equal(rep.NotApplied, []string{"store", "code_mode"}) {
		t.Fatalf("reload of [code_mode] and [store]: %+v %v", rep, err)
	}
	if !strings.Contains(log.String(), "not applied until toolhost serve is restarted: key=code_mode") {
		t.Errorf("no warning in the log:\n%s", log.String())
	}
	var out strings.Builder
	printReport(&out, rep)
	if !strings.Contains(out.String(), "restart    store, code_mode") || strings.Contains(out.String(), "nothing changed") {
		t.Errorf("printReport:\n%s", out.String())
	}
}

// TestWatch: --watch's watcher reloads on a change of the file and not on
// the churn of other files in its directory (nor on a rewrite with the
// same bytes); it follows a Kubernetes-style symbolic link swap.
func TestWatch(t *testing.T) {
	t.Run("other files", func(t *testing.T) {
		path := writeConfig(t, reloadOne)
		var log testutil.Buffer
		r := newTestReloader(t, path, &log)
		stop, err := r.watch(context.Background(), 20*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		dir := filepath.Dir(path)
		for i := range 50 {
			if err := os.WriteFile(filepath.Join(dir, "audit.jsonl"), []byte(strings.Repeat("x", i)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		rewrite(t, path, reloadOne) // the same bytes
		rewrite(t, path, reloadTwo)
		testutil.Eventually(t, 2*time.Minute, func() bool { return slices.Equal(backends(r.h), []string{"fx", "fx2"}) }, "no reload: ", log.String)
		testutil.Eventually(t, 2*time.Minute, func() bool { return strings.Contains(log.String(), "configuration reloaded") }, "no log line")
		if n := strings.Count(log.String(), "configuration reloaded"); n != 1 {
			t.Errorf("%d reloads; want 1 (other files and same bytes do not reload):\n%s", n, log.String())
		}
	})
	t.Run("symlink swap", func(t *testing.T) {
		// A ConfigMap volume: toolhost.toml -> ..data/toolhost.toml,
		// ..data -> ..v1, swapped to ..v2 by renaming a new link over it.
		dir := t.TempDir()
		fixture := testutil.Fixture(t)
		for v, src := range map[string]string{"..v1": reloadOne, "..v2": reloadTwo} {
			if err := os.Mkdir(filepath.Join(dir, v), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, v, "toolhost.toml"), []byte(strings.ReplaceAll(src, "@FIXTURE@", fixture)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.Symlink("..v1", filepath.Join(dir, "..data")))
		must(os.Symlink("..data/toolhost.toml", filepath.Join(dir, "toolhost.toml")))
		var log testutil.Buffer
		r := newTestReloader(t, filepath.Join(dir, "toolhost.toml"), &log)
		stop, err := r.watch(context.Background(), 20*time.Millisecond)
		must(err)
		defer stop()
		must(os.Symlink("..v2", filepath.Join(dir, "..data_tmp")))
		must(os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
		testutil.Eventually(t, 2*time.Minute, func() bool { return slices.Equal(backends(r.h), []string{"fx", "fx2"}) }, "no reload after the swap: ", log.String)
	})
}
