package config

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/BurntSushi/toml"
)

// Code mode (issue 27, items 3 and 4): the gateway's run_code tool runs a
// JavaScript program in the jsrun plugin, whose inner tool calls go through
// the host's pipeline under the calling client's profile. It is on for a
// profile with [profiles.NAME] code_mode = true, or for every profile
// without its own code_mode when [serve] code_mode = true.

// Defaults of the [code_mode] table.
const (
	DefaultCodeModeMemory    = 128 << 20
	DefaultCodeModeTimeout   = 30 * time.Second
	DefaultCodeModeMaxCalls  = 50
	DefaultCodeModeMaxResult = 1 << 20
	DefaultCodeModeMaxArgs   = 256 << 10

	// CodeModePluginFile is the file name of the code-mode plugin.
	CodeModePluginFile = "jsrun.wasm"

	maxCodeModeCalls  = 10000
	maxCodeModeResult = 64 << 20
	minCodeModeMemory = 32 << 20
)

// CodeMode is the [code_mode] table: how run_code runs. A zero field means
// its default (the accessors apply them).
type CodeMode struct {
	// Plugin is the path of the jsrun plugin (plugins/jsrun.wasm, built by
	// make plugins). Default: plugins/jsrun.wasm in the configuration's
	// directory if it exists, else ../plugins/jsrun.wasm next to the
	// toolhost binary (the layout of a source checkout: bin/toolhost and
	// plugins/). Load resolves it when code mode is on for any profile,
	// and a file that does not exist is then a load error.
	Plugin string `toml:"plugin"`
	// Memory caps the plugin's linear memory (default 128MiB, at least
	// 32MiB): a program that allocates more ends with the sandbox's memory
	// error.
	Memory Size `toml:"memory"`
	// Timeout bounds one run, its inner calls included (default 30s); a
	// client's shorter deadline wins.
	Timeout Duration `toml:"timeout"`
	// MaxCalls caps the inner tool calls (and searchTools) of one run
	// (default 50, at most 10000).
	MaxCalls int `toml:"max_calls"`
	// MaxResult caps the total bytes of one run's inner results, their
	// JSON encoding (default 1MiB, at most 64MiB).
	MaxResult Size `toml:"max_result"`
	// MaxArgs caps one inner call's request, its name and JSON arguments
	// (default 256KiB, at most 64MiB).
	MaxArgs Size `toml:"max_args"`
	// Instances is the number of runs that may run at once (the plugin's
	// pool; default: the sandbox's default, 1 to 256).
	Instances int `toml:"instances"`
}

// MemoryBytes returns Memory or its default.
func (c *CodeMode) MemoryBytes() int64 { return orDefault(int64(c.Memory), DefaultCodeModeMemory) }

// TimeoutDuration returns Timeout or its default.
func (c *CodeMode) TimeoutDuration() time.Duration {
	if c.Timeout <= 0 {
		return DefaultCodeModeTimeout
	}
	return c.Timeout.Std()
}

// Calls returns MaxCalls or its default.
func (c *CodeMode) Calls() int { return int(orDefault(int64(c.MaxCalls), DefaultCodeModeMaxCalls)) }

// ResultBytes returns MaxResult or its default.
func (c *CodeMode) ResultBytes() int64 {
	return orDefault(int64(c.MaxResult), DefaultCodeModeMaxResult)
}

// ArgBytes returns MaxArgs or its default.
func (c *CodeMode) ArgBytes() int64 { return orDefault(int64(c.MaxArgs), DefaultCodeModeMaxArgs) }

func orDefault(v, d int64) int64 {
	if v <= 0 {
		return d
	}
	return v
}

// CodeModeOn reports whether run_code is served to the profile: its
// [profiles.NAME] code_mode when set, else [serve] code_mode. An unknown
// profile (and "") follows [serve] code_mode.
func (c *Config) CodeModeOn(profile string) bool {
	if p := c.Profiles[profile]; p != nil && p.CodeMode != nil {
		return *p.CodeMode
	}
	return c.Serve.CodeMode
}

// codeModeAnywhere reports whether code mode is on for some profile.
func (c *Config) codeModeAnywhere() bool {
	if c.Serve.CodeMode {
		return true
	}
	for _, p := range c.Profiles {
		if p.CodeMode != nil && *p.CodeMode {
			return true
		}
	}
	return false
}

// codeModeExecutable is os.Executable (a variable for tests).
var codeModeExecutable = os.Executable

// validateCodeMode checks [code_mode] and, when code mode is on anywhere,
// resolves its plugin path and checks that the file exists.
func (l *loader) validateCodeMode(cfg *Config) {
	c := &cfg.CodeMode
	k := func(name string) toml.Key { return toml.Key{"code_mode", name} }
	if (l.isSet(k("memory")) && c.Memory == 0) || c.Memory < 0 || (c.Memory > 0 && c.Memory < minCodeModeMemory) {
		l.errorf(k("memory"), "%v is too small: the JavaScript engine needs at least 32MiB; remove the key for the default (128MiB)", c.Memory)
	}
	l.timeout(k("timeout"), c.Timeout)
	if (l.isSet(k("max_calls")) && c.MaxCalls == 0) || c.MaxCalls < 0 || c.MaxCalls > maxCodeModeCalls {
		l.errorf(k("max_calls"), "%d is out of range: use 1 to %d, or remove the key for the default (%d)", c.MaxCalls, maxCodeModeCalls, DefaultCodeModeMaxCalls)
	}
	for _, s := range []struct {
		name string
		v    Size
		def  string
	}{{"max_result", c.MaxResult, "1MiB"}, {"max_args", c.MaxArgs, "256KiB"}} {
		if (l.isSet(k(s.name)) && s.v == 0) || s.v < 0 || s.v > maxCodeModeResult {
			l.errorf(k(s.name), "%v is out of range: use 1 byte to 64MiB, or remove the key for the default (%s)", s.v, s.def)
		}
	}
	if c.Instances < 0 || c.Instances > maxInstances {
		l.errorf(k("instances"), "%d is out of range: use 1 to %d, or remove the key for the sandbox default", c.Instances, maxInstances)
	}
	if c.Plugin != "" {
		c.Plugin = resolvePath(l.dir, c.Plugin)
	}
	if !cfg.codeModeAnywhere() {
		return
	}
	if c.Plugin != "" {
		if _, err := os.Stat(c.Plugin); err != nil {
			l.errorf(k("plugin"), "%s: %v: build it with make plugins, or set [code_mode] plugin to jsrun.wasm", c.Plugin, pathErr(err))
		}
		return
	}
	var tried []string
	cands := []string{filepath.Join(l.dir, "plugins", CodeModePluginFile)}
	if exe, err := codeModeExecutable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		cands = append(cands, filepath.Join(filepath.Dir(filepath.Dir(exe)), "plugins", CodeModePluginFile))
	}
	for _, p := range cands {
		if _, err := os.Stat(p); err == nil {
			c.Plugin = p
			return
		}
		tried = append(tried, p)
	}
	key := toml.Key{"serve", "code_mode"}
	if !cfg.Serve.CodeMode {
		key = toml.Key{"code_mode"}
		for _, n := range slices.Sorted(maps.Keys(cfg.Profiles)) {
			if p := cfg.Profiles[n]; p.CodeMode != nil && *p.CodeMode {
				key = toml.Key{"profiles", n, "code_mode"}
				break
			}
		}
	}
	l.errorf(key, "code mode needs the plugin %s, not found at %v: build it with make plugins, or set [code_mode] plugin", CodeModePluginFile, tried)
}

func pathErr(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "no such file"
	}
	return err.Error()
}
