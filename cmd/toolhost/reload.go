package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
)

// watchDebounce is how long --watch waits after the last change to the
// configuration file before it reloads: an editor's save (write a
// temporary file, rename it over the old one, chmod) is several events.
const watchDebounce = 250 * time.Millisecond

// reloader re-reads the configuration file that serve loaded and applies
// it to the running Host (Host.Apply): what POST /api/v1/reload, SIGHUP and
// serve --watch run. Reloads are serialised: one at a time, in the order
// they were asked for.
type reloader struct {
	path   string // as the CLI loaded it (--config, $TOOLHOST_CONFIG or ./toolhost.toml)
	h      *host.Host
	logger hclog.Logger

	mu  sync.Mutex
	sum [sha256.Size]byte // of the bytes last read (by a reload, or at start)
}

func newReloader(path string, h *host.Host, logger hclog.Logger) *reloader {
	r := &reloader{path: path, h: h, logger: logger}
	if data, err := readRegular(path); err == nil {
		r.sum = sha256.Sum256(data)
	}
	return r
}

// reload loads the configuration file again, with the loader the CLI used
// at start (config.Load), and applies it. An invalid file changes nothing:
// the error is the config.ErrorList of every problem with its file, line
// and key (a file that cannot be read is one such problem). Otherwise the
// error is Host.Apply's (host.ErrClosed, host.ErrBackendExists, ...).
// Some keys are not applied until serve is restarted (notReloaded): the
// report's NotApplied names those that changed, and a warning says so.
func (r *reloader) reload(ctx context.Context) (host.ApplyReport, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	data, err := readRegular(r.path)
	if errors.Is(err, errNotRegular) {
		return host.ApplyReport{}, config.ErrorList{{File: r.path, Msg: err.Error(), Err: err}}
	}
	if err == nil {
		r.sum = sha256.Sum256(data)
	}
	cfg, err := config.Load(r.path, nil)
	if err != nil {
		var list config.ErrorList
		if !errors.As(err, &list) {
			cause := err
			if pe := (*os.PathError)(nil); errors.As(err, &pe) {
				cause = pe.Err
			}
			list = config.ErrorList{{File: r.path, Msg: fmt.Sprintf("cannot read the configuration file: %v", cause), Err: err}}
		}
		return host.ApplyReport{}, list
	}
	old := r.h.Config()
	rep, err := r.h.Apply(ctx, cfg)
	if err != nil {
		return rep, err
	}
	rep.NotApplied = notReloaded(old, cfg)
	for _, key := range rep.NotApplied {
		r.logger.Warn("changed, but not applied until toolhost serve is restarted", "key", key)
	}
	return rep, nil
}

// errNotRegular: the configuration's path is not a regular file.
var errNotRegular = errors.New("not a regular file: the configuration must be a file")

// readRegular reads the file at path, refusing anything but a regular
// file (following symbolic links): a FIFO or a device could block the read,
// and every reload after it, forever.
func readRegular(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (it is a %s)", errNotRegular, fi.Mode().Type())
	}
	return os.ReadFile(path)
}

// notReloaded names the keys that differ between a and b and that
// Host.Apply and the gateway leave as they were at start.
func notReloaded(a, b *config.Config) []string {
	var out []string
	check := func(key string, x, y any) {
		if fmt.Sprint(x) != fmt.Sprint(y) {
			out = append(out, key)
		}
	}
	check("host.audit_log", a.Host.AuditLog, b.Host.AuditLog)
	check("host.audit_redact", a.Host.AuditRedact, b.Host.AuditRedact)
	check("host.cache_dir", a.Host.CacheDir, b.Host.CacheDir)
	check("serve.listen", a.Serve.Listen, b.Serve.Listen)
	check("serve.stateless", a.Serve.Stateless, b.Serve.Stateless)
	check("serve.max_body", a.Serve.MaxBody, b.Serve.MaxBody)
	// Whole tables, compared through their pointers: the store is opened
	// once at start, and code mode's runner is built once, at first use.
	if !reflect.DeepEqual(a.Store, b.Store) {
		out = append(out, "store")
	}
	if !reflect.DeepEqual(a.CodeMode, b.CodeMode) {
		out = append(out, "code_mode")
	}
	return out
}

// reloadAndLog runs a reload asked for by trigger ("SIGHUP", "--watch")
// and logs its outcome: the report at Info, a refused configuration at
// Error with one line per problem and its position.
func (r *reloader) reloadAndLog(ctx context.Context, trigger string) {
	rep, err := r.reload(ctx)
	var list config.ErrorList
	switch {
	case errors.As(err, &list):
		r.logger.Error("reload refused: the configuration is invalid; nothing was changed", "trigger", trigger, "file", r.path, "problems", len(list))
		for _, e := range list {
			r.logger.Error("configuration problem", "file", e.File, "line", e.Line, "key", e.Key, "error", e.Msg)
		}
	case err != nil:
		r.logger.Error("reload failed", "trigger", trigger, "file", r.path, "error", err)
	default:
		r.logger.Info("configuration reloaded", "trigger", trigger, "file", r.path,
			"added", rep.Added, "removed", rep.Removed, "changed", rep.Changed,
			"unchanged", len(rep.Unchanged), "disabled", rep.Disabled, "policy", rep.Policy)
	}
}

// onSignal reloads on every signal of hup (signal.Notify'd with SIGHUP,
// buffered) until stop is called (or ctx is done). Signals that arrive
// during a reload coalesce into one more reload. stop returns once no
// reload runs any more; the caller stops hup's notifications.
func (r *reloader) onSignal(ctx context.Context, hup <-chan os.Signal) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				r.reloadAndLog(ctx, "SIGHUP")
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// watch reloads when the configuration file changes, debounce after the
// last event, until stop is called (or ctx is done). It watches the file's
// directory, not the file: editors save by writing a new file and renaming
// it over the old one, which a watch on the old file's inode would not
// see. A file that is removed leaves the configuration in force as it is
// (a warning says so) until the file is back. A change that leaves the
// bytes as they were (touch, chmod, another file of the directory) does
// not reload. When the path is a symbolic link (a Kubernetes ConfigMap
// volume swaps a ..data link), every event of the directory is a
// candidate, and the bytes decide. The file is checked once at start too
// (it may have changed since serve read it). stop returns once the watcher
// and any reload it started are done.
func (r *reloader) watch(ctx context.Context, debounce time.Duration) (stop func(), err error) {
	abs, err := filepath.Abs(r.path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(abs)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("--watch: %w", err)
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, fmt.Errorf("--watch: watching %s: %w", dir, err)
	}
	fi, err := os.Lstat(abs)
	linked := err == nil && fi.Mode()&os.ModeSymlink != 0
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A first check at once: the file may have changed since it was
		// read at start (the backends' start can take a while).
		timer := time.NewTimer(0)
		defer timer.Stop()
		gone := false
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Clean(ev.Name) == dir && ev.Has(fsnotify.Remove|fsnotify.Rename) {
					r.logger.Error("--watch: the configuration's directory was removed or renamed; no longer watching (send SIGHUP to reload)", "dir", dir)
					return
				}
				if linked || filepath.Clean(ev.Name) == abs {
					timer.Reset(debounce)
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				// fsnotify.ErrEventOverflow: events were lost; check the
				// file once more.
				r.logger.Warn("--watch", "error", err)
				timer.Reset(debounce)
			case <-timer.C:
				data, err := readRegular(abs)
				if errors.Is(err, os.ErrNotExist) {
					if !gone {
						r.logger.Warn("--watch: the configuration file is gone; the configuration in force stays until it is back", "file", r.path)
					}
					gone = true
					continue
				}
				gone = false
				if err == nil {
					r.mu.Lock()
					same := sha256.Sum256(data) == r.sum
					r.mu.Unlock()
					if same {
						r.logger.Debug("--watch: the configuration file's bytes are unchanged; not reloading", "file", r.path)
						continue
					}
				}
				r.reloadAndLog(ctx, "--watch")
			}
		}
	}()
	return func() {
		cancel()
		w.Close()
		<-done
	}, nil
}
