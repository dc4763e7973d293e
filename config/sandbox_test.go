package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/config"
)

// TestSandboxModeDefaults: [host] sandbox is the default of every stdio
// server's sandbox key, a server's own key wins, an HTTP server gets none;
// a Config built in Go gets the same from Validate, idempotently.
func TestSandboxModeDefaults(t *testing.T) {
	for _, c := range []struct {
		host, own, want string
	}{
		{"", "", config.SandboxOff},
		{"strict", "", config.SandboxStrict},
		{"best-effort", "", config.SandboxBestEffort},
		{"strict", "off", config.SandboxOff},
		{"off", "strict", config.SandboxStrict},
		{"", "best-effort", config.SandboxBestEffort},
	} {
		cfg := &config.Config{
			Dir:  t.TempDir(),
			Host: config.Host{Sandbox: c.host},
			Servers: map[string]*config.Server{
				"s":   {Command: "srv", Sandbox: c.own},
				"web": {URL: "http://127.0.0.1:1/mcp"},
			},
		}
		for range 2 { // Validate is idempotent
			if err := cfg.Validate(); err != nil {
				t.Fatalf("host %q, own %q: %v", c.host, c.own, err)
			}
			if got := cfg.Servers["s"].Sandbox; got != c.want {
				t.Errorf("host %q, own %q: sandbox = %q, want %q", c.host, c.own, got, c.want)
			}
			if got := cfg.Servers["web"].Sandbox; got != "" {
				t.Errorf("an HTTP server's sandbox = %q, want none", got)
			}
		}
	}
}

// TestSandboxKeysGo: the sandbox keys of a Config built in Go are checked
// by value as a file's are by key: the plugins' grammar (allowed_paths
// parsed into Mounts relative to Dir, allowed_hosts lowercased), and each
// key is refused where nothing would enforce it.
func TestSandboxKeysGo(t *testing.T) {
	dir := t.TempDir()
	cfg := &config.Config{
		Dir: dir,
		Servers: map[string]*config.Server{"s": {Command: "srv", Sandbox: "strict",
			AllowedPaths: map[string]string{"/work": "rw:work", "/ro": "/usr"}, AllowedHosts: []string{"API.Example.com:443"},
			Memory: 64 << 20, Pids: 32}},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers["s"]
	want := []config.Mount{{Guest: "/ro", Host: "/usr"}, {Guest: "/work", Host: filepath.Join(dir, "work"), ReadWrite: true}}
	if len(s.Mounts) != 2 || s.Mounts[0] != want[0] || s.Mounts[1] != want[1] {
		t.Errorf("mounts = %+v, want %+v", s.Mounts, want)
	}
	if err := cfg.Validate(); err != nil || len(s.Mounts) != 2 {
		t.Errorf("a second Validate: %v, %d mounts, want 2", err, len(s.Mounts))
	}
	if s.AllowedHosts[0] != "api.example.com:443" {
		t.Errorf("allowed_hosts = %q", s.AllowedHosts)
	}

	for name, c := range map[string]struct {
		s    *config.Server
		want []string
	}{
		"off":        {&config.Server{Command: "srv", Memory: 64 << 20, Pids: 3}, []string{"servers.s.memory: is not enforced without a sandbox", "servers.s.pids: is not enforced"}},
		"http":       {&config.Server{URL: "http://127.0.0.1:1/mcp", Sandbox: "strict", AllowedHosts: []string{"a.com"}}, []string{"servers.s.allowed_hosts: is only used by stdio servers", "servers.s.sandbox: is only used by stdio servers"}},
		"mode":       {&config.Server{Command: "srv", Sandbox: "on"}, []string{`servers.s.sandbox: "on" is not a sandbox mode`}},
		"quota":      {&config.Server{Command: "srv", Sandbox: "strict", AllowedPaths: map[string]string{"/w": "rw:."}, MountQuota: map[string]config.Size{"/w": 1}}, []string{"servers.s.mount_quota: is not supported for servers"}},
		"pids":       {&config.Server{Command: "srv", Sandbox: "strict", Pids: -1}, []string{"servers.s.pids: -1 is out of range"}},
		"memory":     {&config.Server{Command: "srv", Sandbox: "best-effort", Memory: 1 << 20}, []string{"servers.s.memory: 1MiB is too small"}},
		"guest path": {&config.Server{Command: "srv", Sandbox: "strict", AllowedPaths: map[string]string{"rel": "."}}, []string{`servers.s.allowed_paths.rel: guest path "rel" must be absolute`}},
		"host glob":  {&config.Server{Command: "srv", Sandbox: "strict", AllowedHosts: []string{"http://a.com"}}, []string{"servers.s.allowed_hosts: element 1 \"http://a.com\": write a host name, not a URL"}},
	} {
		bad := &config.Config{Dir: dir, Servers: map[string]*config.Server{"s": c.s}}
		err := bad.Validate()
		if err == nil {
			t.Errorf("%s: Validate succeeded", name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant it to contain %q", name, err, w)
			}
		}
	}
	host := &config.Config{Dir: dir, Host: config.Host{Sandbox: "maybe"}, Servers: map[string]*config.Server{"s": {Command: "srv"}}}
	if err := host.Validate(); err == nil || !strings.Contains(err.Error(), `host.sandbox: "maybe" is not a sandbox mode`) {
		t.Errorf("[host] sandbox = \"maybe\": %v", err)
	}
}

// TestCheckSandboxMounts: Check finds allowed_paths entries whose host
// directory is missing or a file, for sandboxed servers as for plugins,
// at their file:line and key.
func TestCheckSandboxMounts(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "toolhost.toml")
	src := `[servers.s]
command = "sh"
sandbox = "strict"
allowed_paths = { "/gone" = "rw:./gone", "/file" = "ro:file", "/ws" = "rw:ws" }
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Check(nil)
	want := []string{
		file + `:4: servers.s.allowed_paths."/file": ` + filepath.Join(dir, "file") + ` is not a directory: allowed_paths maps a guest path to a host directory`,
		file + `:4: servers.s.allowed_paths."/gone": ` + filepath.Join(dir, "gone") + ` does not exist: create the directory or fix the path (relative paths are relative to the configuration file)`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("Check:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Error("Check's list does not wrap fs.ErrNotExist")
	}
}
