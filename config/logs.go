package config

import "github.com/BurntSushi/toml"

// maxLogSize bounds [host] log_max_size.
const maxLogSize Size = 16 << 30

// logFiles resolves [host] log_directory and checks (and defaults)
// log_max_size and log_max_files, which mean nothing without it.
func (l *loader) logFiles(h *Host) {
	key := func(k string) toml.Key { return toml.Key{"host", k} }
	if h.LogDirectory == "" {
		if l.isSet(key("log_directory")) {
			l.errorf(key("log_directory"), "must not be empty: remove the key to write no log files")
		}
		for _, k := range []string{"log_max_size", "log_max_files"} {
			if l.isSet(key(k)) {
				l.errorf(key(k), "has no effect without log_directory: set [host] log_directory or remove it")
			}
		}
		return
	}
	h.LogDirectory = resolvePath(l.dir, h.LogDirectory)
	switch {
	case l.isSet(key("log_max_size")) && (h.LogMaxSize < 1<<20 || h.LogMaxSize > maxLogSize):
		l.errorf(key("log_max_size"), "is %s: it must be between 1MiB and %s (remove it for the default, %s)", h.LogMaxSize, maxLogSize, DefaultLogMaxSize)
	case l.isSet(key("log_max_size")) && h.LogMaxSize%(1<<20) != 0:
		l.errorf(key("log_max_size"), "is %s: it must be a whole number of MiB (log files rotate by the MiB), such as \"%dMiB\"", h.LogMaxSize, max(1, int64(h.LogMaxSize)>>20))
	case h.LogMaxSize == 0:
		h.LogMaxSize = DefaultLogMaxSize
	}
	switch {
	case l.isSet(key("log_max_files")) && (h.LogMaxFiles < 2 || h.LogMaxFiles > MaxLogFiles):
		l.errorf(key("log_max_files"), "is %d: it must be between 2 (the current file and one rotated) and %d", h.LogMaxFiles, MaxLogFiles)
	case h.LogMaxFiles == 0:
		h.LogMaxFiles = DefaultLogMaxFiles
	}
}
