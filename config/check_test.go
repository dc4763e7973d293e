package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
	"github.com/toolhost/toolhost/sandbox"
)

// TestCheck: Check finds, without starting anything, a missing plugin file,
// a module of no supported ABI, a memory cap below the module's declared
// minimum and server commands that cannot be run, each at its file:line and
// key.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	echo := wasmbuild.Build(t, filepath.Join(testutil.Root(), "testdata", "plugins"), "./echo")
	for name, body := range map[string]string{"empty.wasm": "\x00asm\x01\x00\x00\x00", "text.wasm": "not wasm", "script.sh": "#!/bin/sh\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := strings.ReplaceAll(`[servers.gone]
command = "toolhost-no-such-program"

[servers.rel]
command = "./bin/missing-server"

[servers.notexec]
command = "./script.sh"

[servers.ok]
command = "sh"

[servers.remote]
url = "http://127.0.0.1:1/mcp"

[plugins.missing]
path = "missing.wasm"

[plugins.small]
path = "@ECHO@"
memory = "64KiB"

[plugins.noabi]
path = "empty.wasm"

[plugins.text]
path = "text.wasm"

[plugins.fine]
path = "@ECHO@"
memory = "4MiB"
`, "@ECHO@", echo)
	file := filepath.Join(dir, "toolhost.toml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Check(&config.CheckOptions{Module: sandbox.CheckModule, DefaultMemory: sandbox.DefaultMemory})
	var list config.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Check: %v, want an ErrorList", err)
	}
	want := []string{
		file + `:2: servers.gone.command: "toolhost-no-such-program" is not found in PATH: install it, or give its path`,
		file + `:5: servers.rel.command: ` + filepath.Join(dir, "bin/missing-server") + `: does not exist (a relative command path is relative to the configuration file)`,
		file + `:8: servers.notexec.command: ` + filepath.Join(dir, "script.sh") + `: is not executable: chmod +x it`,
		file + `:17: plugins.missing.path: ` + filepath.Join(dir, "missing.wasm") + ` does not exist: build the plugin (make plugins) or fix the path (relative paths are relative to the configuration file)`,
		file + `:21: plugins.small.memory: memory 64KiB is below the 2304KiB the module declares as its minimum: set memory >= "2304KiB"`,
		file + `:24: plugins.noabi.path: ` + filepath.Join(dir, "empty.wasm") + `: unsupported plugin ABI: the module exports functions []; a plugin must export list_tools and call_tool (hyper-mcp v2) or describe and call (mcp.run v1), see docs/PLUGIN-ABI.md`,
		file + `:27: plugins.text.path: ` + filepath.Join(dir, "text.wasm") + `: malformed WebAssembly module: not a WebAssembly binary (missing \0asm magic): unsupported plugin ABI`,
	}
	if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Check:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	if !errors.Is(err, sandbox.ErrABI) {
		t.Errorf("Check's list does not wrap sandbox.ErrABI")
	}

	// A configuration with nothing to find is nil.
	ok, err := config.Parse([]byte("[plugins.fine]\npath = \""+echo+"\"\n\n[servers.ok]\ncommand = \"sh\"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ok.Check(&config.CheckOptions{Module: sandbox.CheckModule, DefaultMemory: sandbox.DefaultMemory}); err != nil {
		t.Errorf("Check of a sound configuration: %v", err)
	}
}

// TestCheckDefaultMemory: a plugin without a memory key is checked against
// CheckOptions.DefaultMemory (the sandbox's default, which the sandbox
// defines), at the key of its table; without a DefaultMemory it is not.
func TestCheckDefaultMemory(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "big.wasm")
	if err := os.WriteFile(mod, []byte("\x00asm"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte("[plugins.big]\npath = \""+mod+"\"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	declares := func(string) (int64, error) { return 300 << 20, nil }
	err = cfg.Check(&config.CheckOptions{Module: declares, DefaultMemory: sandbox.DefaultMemory})
	want := `plugins.big: the default memory 256MiB is below the 300MiB the module declares as its minimum: set memory >= "300MiB"`
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("Check: %v, want ...%s", err, want)
	}
	if err := cfg.Check(&config.CheckOptions{Module: declares}); err != nil {
		t.Errorf("Check without DefaultMemory: %v, want nil", err)
	}
}
