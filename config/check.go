package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/toolhost/toolhost/internal/ociplugin/ociref"
)

// CheckOptions configures Config.Check. nil means the defaults.
type CheckOptions struct {
	// LookPath finds a server command that has no slash; nil means
	// exec.LookPath, in toolhost's own PATH, as the stdio transport looks
	// it up when it starts the server.
	LookPath func(file string) (string, error)

	// Module reads the WebAssembly module at path without running it and
	// returns the linear memory it declares as its minimum, in bytes; an
	// error says why the file is not a loadable plugin. nil skips these
	// checks (only the file's existence is checked). The sandbox provides
	// one: sandbox.CheckModule.
	Module func(path string) (minMemory int64, err error)

	// DefaultMemory is the memory cap, in bytes, of a plugin without a
	// memory key, as the sandbox that enforces it defines it
	// (sandbox.DefaultMemory, 256 MiB). 0: a plugin without a memory key
	// is not checked against a cap.
	DefaultMemory int64

	// CachedOCI returns the cached module of a plugin whose path is an OCI
	// reference (oci://...), without the network; ok false when it is not
	// in the cache yet. nil, or not cached: the plugin's module is not
	// checked (it is pulled at start). cmd/toolhost uses
	// ociplugin.Cached.
	CachedOCI func(ref string) (path string, ok bool)
}

// Check looks at what Load leaves alone because it lies outside the file,
// without starting anything and without the network:
//
//   - every plugin's path is a regular file that can be read (for an OCI
//     reference, its cached module when CheckOptions.CachedOCI has one);
//   - with CheckOptions.Module, it is a module of a supported plugin ABI
//     whose declared minimum memory fits under its memory cap (memory,
//     default CheckOptions.DefaultMemory);
//   - every allowed_paths entry (a plugin's, a sandboxed server's) names
//     an existing directory, symbolic links followed, as the sandboxes
//     need when they start the backend;
//   - every stdio server's command exists: looked up in PATH when it has no
//     slash, else relative to the configuration file's directory, and is an
//     executable file.
//
// It returns nil or an ErrorList, sorted by line, each *Error naming the
// file, line and key as Load's do (plugins.NAME.path, plugins.NAME.memory,
// servers.NAME.command, servers.NAME.allowed_paths."/GUEST"). A URL is never dialled: whether an HTTP server is
// up is a question for the running host (toolhost status).
func (c *Config) Check(opts *CheckOptions) error {
	var o CheckOptions
	if opts != nil {
		o = *opts
	}
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	var errs ErrorList
	add := func(key toml.Key, err error, format string, args ...any) {
		line := 0
		if c.loc != nil {
			line = c.loc.line(key)
		}
		errs = append(errs, &Error{File: c.file, Line: line, Key: key.String(), Msg: fmt.Sprintf(format, args...), Err: err})
	}
	for _, name := range c.ServerNames() {
		s := c.Servers[name]
		if !s.IsStdio() {
			continue
		}
		key := toml.Key{"servers", name, "command"}
		if !strings.Contains(s.Command, "/") {
			if _, err := o.LookPath(s.Command); err != nil {
				add(key, exec.ErrNotFound, "%q is not found in PATH: install it, or give its path", s.Command)
			}
			continue
		}
		path := s.Command
		if !filepath.IsAbs(path) {
			path = filepath.Join(c.Dir, path)
		}
		if err := executable(path); errors.Is(err, fs.ErrNotExist) {
			add(key, err, "%s: does not exist (a relative command path is relative to the configuration file)", path)
		} else if err != nil {
			add(key, err, "%s: %v", path, err)
		}
	}
	for _, name := range c.ServerNames() {
		if s := c.Servers[name]; s.IsStdio() {
			checkMounts(toml.Key{"servers", name, "allowed_paths"}, s.Mounts, add)
		}
	}
	for _, name := range c.PluginNames() {
		p := c.Plugins[name]
		key := toml.Key{"plugins", name}
		checkMounts(append(key[:len(key):len(key)], "allowed_paths"), p.Mounts, add)
		path := p.Path
		if ociref.Is(path) {
			cached, ok := "", false
			if o.CachedOCI != nil {
				cached, ok = o.CachedOCI(path)
			}
			if !ok {
				continue
			}
			path = cached
		}
		st, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			add(append(key, "path"), err, "%s does not exist: build the plugin (make plugins) or fix the path (relative paths are relative to the configuration file)", p.Path)
			continue
		case err != nil:
			add(append(key, "path"), err, "%v", err)
			continue
		case !st.Mode().IsRegular():
			add(append(key, "path"), nil, "%s is not a regular file", p.Path)
			continue
		}
		if o.Module == nil {
			continue
		}
		n, err := o.Module(path)
		if err != nil {
			add(append(key, "path"), err, "%v", err)
			continue
		}
		need := Size(n)
		memory, memKey, which := p.Memory, append(key, "memory"), "memory"
		if memory == 0 {
			if o.DefaultMemory <= 0 {
				continue
			}
			memory, memKey, which = Size(o.DefaultMemory), key, "the default memory"
		}
		if need > memory {
			add(memKey, nil, "%s %s is below the %s the module declares as its minimum: set memory >= %q", which, memory, need, need.String())
		}
	}
	if len(errs) == 0 {
		return nil
	}
	errs.sort()
	return errs
}

// checkMounts reports the mounts whose host path is not an existing
// directory, keyed key."GUEST".
func checkMounts(key toml.Key, mounts []Mount, add func(toml.Key, error, string, ...any)) {
	for _, m := range mounts {
		mk := append(key[:len(key):len(key)], m.Guest)
		switch st, err := os.Stat(m.Host); {
		case errors.Is(err, fs.ErrNotExist):
			add(mk, err, "%s does not exist: create the directory or fix the path (relative paths are relative to the configuration file)", m.Host)
		case err != nil:
			add(mk, err, "%v", err)
		case !st.IsDir():
			add(mk, nil, "%s is not a directory: allowed_paths maps a guest path to a host directory", m.Host)
		}
	}
}

// executable reports why path is not an executable regular file.
func executable(path string) error {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case !st.Mode().IsRegular():
		return errors.New("is not a regular file")
	case st.Mode().Perm()&0o111 == 0:
		return errors.New("is not executable: chmod +x it")
	}
	return nil
}
