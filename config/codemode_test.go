package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCodeModeConfig: [code_mode] defaults and bounds, per-profile
// code_mode over [serve] code_mode, and the plugin path: resolved against
// the configuration's directory, found by default in its plugins/ or next
// to the binary, and a missing file a load error only when code mode is on.
func TestCodeModeConfig(t *testing.T) {
	old := codeModeExecutable
	t.Cleanup(func() { codeModeExecutable = old })
	codeModeExecutable = func() (string, error) { return "", errors.New("no executable") }

	dir := t.TempDir()
	parse := func(src string) (*Config, error) { return Parse([]byte(src), &Options{Dir: dir}) }

	// Off: no plugin needed, defaults through the accessors.
	cfg, err := parse("[code_mode]\nmax_calls = 7\n")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CodeModeOn("") || cfg.CodeMode.Calls() != 7 || cfg.CodeMode.MemoryBytes() != DefaultCodeModeMemory ||
		cfg.CodeMode.TimeoutDuration() != 30*time.Second || cfg.CodeMode.ResultBytes() != 1<<20 || cfg.CodeMode.ArgBytes() != 256<<10 {
		t.Fatalf("defaults: %+v", cfg.CodeMode)
	}

	// On, no plugin anywhere: a load error naming the key that turned it on.
	for _, src := range []string{
		"[serve]\ncode_mode = true\n",
		"[profiles.dev]\ncode_mode = true\n",
	} {
		_, err := parse(src)
		if err == nil || !strings.Contains(err.Error(), "code_mode") || !strings.Contains(err.Error(), "jsrun.wasm, not found") || !strings.Contains(err.Error(), "line") {
			t.Errorf("%q: err = %v", src, err)
		}
	}
	// An explicit path that does not exist.
	if _, err := parse("[serve]\ncode_mode = true\n[code_mode]\nplugin = \"nope/js.wasm\"\n"); err == nil ||
		!strings.Contains(err.Error(), "code_mode.plugin") || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing plugin: %v", err)
	}
	// ... but not when code mode is off.
	if _, err := parse("[code_mode]\nplugin = \"nope/js.wasm\"\n"); err != nil {
		t.Errorf("off: %v", err)
	}

	// Found in the configuration's plugins/.
	if err := os.MkdirAll(filepath.Join(dir, "plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "plugins", "jsrun.wasm")
	if err := os.WriteFile(want, []byte("\x00asm"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = parse("[serve]\ncode_mode = true\n[profiles.ro]\ncode_mode = false\n[profiles.dev]\nallow = [\"*\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CodeMode.Plugin != want || !cfg.CodeModeOn("") || !cfg.CodeModeOn("dev") || cfg.CodeModeOn("ro") {
		t.Fatalf("plugin %q, on: %v %v %v", cfg.CodeMode.Plugin, cfg.CodeModeOn(""), cfg.CodeModeOn("dev"), cfg.CodeModeOn("ro"))
	}
	// Next to the binary: <bin>/../plugins/jsrun.wasm.
	other := t.TempDir()
	if err := os.MkdirAll(filepath.Join(other, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(other, "plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "plugins", "jsrun.wasm"), []byte("\x00asm"), 0o644); err != nil {
		t.Fatal(err)
	}
	codeModeExecutable = func() (string, error) { return filepath.Join(other, "bin", "toolhost"), nil }
	cfg, err = Parse([]byte("[profiles.dev]\ncode_mode = true\n"), &Options{Dir: t.TempDir()})
	if err != nil || cfg.CodeMode.Plugin != filepath.Join(other, "plugins", "jsrun.wasm") {
		t.Fatalf("next to the binary: %v %+v", err, cfg)
	}

	for _, bad := range []struct{ toml, key string }{
		{"[code_mode]\nmemory = \"1MiB\"\n", "code_mode.memory"},
		{"[code_mode]\nmemory = 0\n", "code_mode.memory"},
		{"[code_mode]\ntimeout = \"0s\"\n", "code_mode.timeout"},
		{"[code_mode]\nmax_calls = 0\n", "code_mode.max_calls"},
		{"[code_mode]\nmax_calls = 100000\n", "code_mode.max_calls"},
		{"[code_mode]\nmax_result = \"1GiB\"\n", "code_mode.max_result"},
		{"[code_mode]\nmax_args = 0\n", "code_mode.max_args"},
		{"[code_mode]\ninstances = -1\n", "code_mode.instances"},
		{"[code_mode]\nmax_call = 3\n", "max_call"},
		{"[serve]\ncode_mode = \"yes\"\n", "code_mode"},
		{"[profiles.a]\ncode_mode = 1\n", "code_mode"},
	} {
		_, err := parse(bad.toml)
		if err == nil || !strings.Contains(err.Error(), bad.key) || !strings.Contains(err.Error(), "line") {
			t.Errorf("%q: err = %v, want one naming %s and its line", bad.toml, err, bad.key)
		}
	}
}
