package host

import (
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/serverlog"
)

// ErrNoLogs: a backend has no log file: [host] log_directory is not set,
// or the backend has logged nothing yet.
var ErrNoLogs = serverlog.ErrNoLogs

// MaxLogTail is the most lines Host.Logs returns.
const MaxLogTail = 10000

// openLogs opens [host] log_directory (when set) for the backends' log
// files. The directory is kept until Close: Apply does not move it.
func (h *Host) openLogs(cfg *config.Config) error {
	if cfg.Host.LogDirectory == "" {
		return nil
	}
	d, err := serverlog.Open(cfg.Host.LogDirectory, &serverlog.Options{
		MaxSize:  int64(cfg.Host.LogMaxSize),
		MaxFiles: cfg.Host.LogMaxFiles,
		Scrub:    scrubFunc(cfg),
	})
	if err != nil {
		return fmt.Errorf("host: [host] log_directory %q: %w; fix the path or its permissions, or remove the key", cfg.Host.LogDirectory, err)
	}
	h.logs = d
	h.closers = append(h.closers, d.Close)
	return nil
}

// scrubFunc is the audit's scrubber of configuration secrets as a
// function (nil when there are none).
func scrubFunc(cfg *config.Config) func(string) string {
	if r := secretScrubber(cfg); r != nil {
		return r.Replace
	}
	return nil
}

// backendLogger returns backend name's logger: the console's, teed to its
// log file when [host] log_directory is set.
func (h *Host) backendLogger(name string) hclog.Logger {
	l := h.logger.Named(name)
	if h.logs != nil {
		l = h.logs.Logger(l, name)
	}
	return l
}

// LogDirectory returns the directory of the backends' log files ([host]
// log_directory as the Host started), or "" when there are none.
func (h *Host) LogDirectory() string {
	if h.logs == nil {
		return ""
	}
	return h.logs.Path()
}

// Logs returns the last tail lines (1 to MaxLogTail; beyond is capped) of
// backend name's log file, oldest first, reading into its rotated files
// when needed, already redacted. Reading is bounded in memory and time
// whatever the files' sizes (see serverlog.Tail: a line over 64 KiB is
// cut, at most 8 MiB is returned). Errors: ErrUnknownBackend (not a
// backend now), ErrNoLogs (no log_directory, or nothing logged yet), I/O
// errors.
func (h *Host) Logs(name string, tail int) ([]string, error) {
	if _, ok := h.cur.Load().byName[name]; !ok {
		return nil, unknownBackend(name)
	}
	if h.logs == nil {
		return nil, fmt.Errorf("%w: [host] log_directory is not set", ErrNoLogs)
	}
	tail = min(max(tail, 1), MaxLogTail)
	return serverlog.Tail(h.logs.Path(), name, tail)
}
