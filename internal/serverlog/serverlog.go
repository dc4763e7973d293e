// Package serverlog writes each backend's log to a file of its own,
// <dir>/NAME.log, rotated by size with a bounded number of files kept
// (gopkg.in/natefinch/lumberjack.v2), and reads the end of it back
// (Tail, Follow) for `toolhost logs` and GET /api/v1/servers/{name}/logs.
//
// A backend's logger becomes a Tee of its console logger and a file
// logger at Debug level (hclog's standard format, one record per line
// unless a value holds a newline), so the file gets everything the
// backend says whatever the console's --log-level: its stderr lines, its
// notifications/message, its lifecycle (start, ready, lost with the exit
// status, restart, health failures, circuit changes), its sandbox's
// denials, a plugin's log calls. Every record passes through the Dir's
// scrubber (configuration secrets → [REDACTED]) before it is written.
package serverlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/toolhost/toolhost/internal/lazyre"
)

// Errors.
var (
	// ErrNoLogs: a backend has no log file (no log directory is
	// configured, or the backend has written nothing yet).
	ErrNoLogs = errors.New("no log file")
	// ErrBadName: a name that is not a backend name ([A-Za-z0-9_-],
	// 1 to 64), so not a file name in the log directory.
	ErrBadName = errors.New("not a backend name")
)

// Defaults of Options.
const (
	DefaultMaxSize  = 10 << 20
	DefaultMaxFiles = 5
	// MaxLine bounds one line returned by Tail and Follow (bytes); a longer
	// line is cut and ends with "…".
	MaxLine = 64 << 10
	// MaxTailBytes bounds the bytes Tail returns; older lines beyond it
	// are left out.
	MaxTailBytes = 8 << 20
	// maxScan bounds how far back Tail scans for line ends in one file.
	maxScan = 64 << 20
)

// Options configures a Dir. Nil means defaults.
type Options struct {
	// MaxSize is the size in bytes at which a log file is rotated: a
	// whole number of MiB, rounded up (lumberjack counts in MiB). Default
	// 10 MiB.
	MaxSize int64
	// MaxFiles is how many files of one log are kept, the current one
	// included (at least 2). Default 5.
	MaxFiles int
	// Scrub, when set, rewrites every record before it is written
	// (secrets → [REDACTED]).
	Scrub func(string) string
}

// Dir is a log directory: the per-backend files of one Host. Its methods
// are safe for concurrent use.
type Dir struct {
	path     string
	maxMiB   int
	backups  int
	scrub    atomic.Pointer[func(string) string]
	mu       sync.Mutex
	files    map[string]*lumberjack.Logger
	closed   atomic.Bool
	failures atomic.Int64
}

// nameRE is config's backend name grammar: a safe file name (no "/", no
// ".", never "." or "..").
var nameRE = lazyre.New(`^[A-Za-z0-9_-]{1,64}$`) // compiled at first use, not at every start (issue 26, item 3)

// Open makes dir (0700, with its parents) if it does not exist and checks
// that a file can be created in it. Its error names the path; the caller
// names the configuration key.
func Open(dir string, opts *Options) (*Dir, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxFiles < 2 {
		o.MaxFiles = 2
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the log directory: %w", err)
	}
	probe, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return nil, fmt.Errorf("cannot write in the log directory: %w", err)
	}
	probe.Close()
	os.Remove(probe.Name())
	d := &Dir{path: dir, maxMiB: int((o.MaxSize + 1<<20 - 1) >> 20), backups: o.MaxFiles - 1, files: map[string]*lumberjack.Logger{}}
	d.SetScrub(o.Scrub)
	return d, nil
}

// Path returns the directory.
func (d *Dir) Path() string { return d.path }

// SetScrub replaces the scrubber (after a reload that changed secrets).
func (d *Dir) SetScrub(f func(string) string) {
	if f == nil {
		d.scrub.Store(nil)
		return
	}
	d.scrub.Store(&f)
}

// File returns the path of backend name's current log file.
func File(dir, name string) (string, error) {
	if !nameRE.MatchString(name) {
		return "", fmt.Errorf("%w: %q", ErrBadName, name)
	}
	return filepath.Join(dir, name+".log"), nil
}

// Logger returns the logger of backend name: console (its console logger,
// as it was) teed to the backend's log file at Debug. A bad name gets
// console alone.
func (d *Dir) Logger(console hclog.Logger, name string) hclog.Logger {
	w, err := d.writer(name)
	if err != nil {
		return console
	}
	file := hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      hclog.Debug,
		Output:     w,
		TimeFormat: "2006-01-02T15:04:05.000Z07:00",
		Color:      hclog.ColorOff,
	})
	return Tee(console, file)
}

// Failures returns how many records could not be written (disk full, the
// directory removed): they are dropped, never fail the backend.
func (d *Dir) Failures() int64 { return d.failures.Load() }

// Close closes every open log file; records written after it are
// dropped. It is idempotent.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed.Store(true)
	var errs []error
	for _, f := range d.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// writer returns the scrubbing writer of backend name's file.
func (d *Dir) writer(name string) (io.Writer, error) {
	path, err := File(d.path, name)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.files[name]
	if !ok {
		f = rotator(path, d.maxMiB, d.backups)
		d.files[name] = f
	}
	return &scrubWriter{d: d, w: f}, nil
}

// rotators are the lumberjack.Loggers of this process, by file and
// settings: lumberjack v2.2.1 starts a goroutine per Logger that Close
// does not stop (natefinch/lumberjack#56), so one Logger per file is made
// once and shared (by successive Hosts, reloads and tests) rather than
// leaking a goroutine per Host.
var rotators struct {
	mu sync.Mutex
	m  map[rotatorKey]*lumberjack.Logger
}

type rotatorKey struct {
	path            string
	maxMiB, backups int
}

func rotator(path string, maxMiB, backups int) *lumberjack.Logger {
	rotators.mu.Lock()
	defer rotators.mu.Unlock()
	if rotators.m == nil {
		rotators.m = map[rotatorKey]*lumberjack.Logger{}
	}
	k := rotatorKey{path, maxMiB, backups}
	l := rotators.m[k]
	if l == nil {
		l = &lumberjack.Logger{Filename: path, MaxSize: maxMiB, MaxBackups: backups}
		rotators.m[k] = l
	}
	return l
}

// scrubWriter scrubs each record (hclog writes one per Write) and writes
// it to the file; a failed write is counted, not returned (the backend
// must not fail because its log cannot be written).
type scrubWriter struct {
	d *Dir
	w io.Writer
}

func (s *scrubWriter) Write(p []byte) (int, error) {
	n := len(p)
	if s.d.closed.Load() {
		return n, nil
	}
	if f := s.d.scrub.Load(); f != nil {
		p = []byte((*f)(string(p)))
	}
	if _, err := s.w.Write(p); err != nil {
		s.d.failures.Add(1)
	}
	return n, nil
}
