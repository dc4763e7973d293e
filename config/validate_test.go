package config_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/config"
)

// TestValidateGoConfig: a Config built in Go gets every documented default
// from Validate, as a file gets it from Load; bad values are errors that
// name the key.
func TestValidateGoConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := &config.Config{
		Dir:     dir,
		Servers: map[string]*config.Server{"s": {Command: "srv"}},
		Plugins: map[string]*config.Plugin{"p": {Path: "p.wasm", AllowedPaths: map[string]string{"/data": "rw:data"}}},
	}
	if cfg.Validated() {
		t.Fatal("a Config built in Go reports Validated before Validate")
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if !cfg.Validated() {
		t.Error("Validated is false after Validate")
	}
	s, p := cfg.Servers["s"], cfg.Plugins["p"]
	checks := []struct {
		what      string
		got, want any
	}{
		{"call_timeout", cfg.Host.CallTimeout.Std(), config.DefaultCallTimeout},
		{"policy default", cfg.Policy.Default, config.PolicyAllow},
		{"server name", s.Name, "s"},
		{"server start", s.Start, config.StartEager},
		{"server startup_timeout", s.StartupTimeout.Std(), config.DefaultStartupTimeout},
		{"server health_check", s.HealthCheck, config.HealthPing},
		{"server health_interval", s.HealthInterval.Std(), config.DefaultHealthInterval},
		{"server health_timeout", s.HealthTimeout.Std(), config.DefaultHealthTimeout},
		{"server health_threshold", s.HealthThreshold, config.DefaultHealthThreshold},
		{"server restart_backoff.min", s.RestartBackoff.Min.Std(), config.DefaultRestartMin},
		{"server restart_backoff.max", s.RestartBackoff.Max.Std(), config.DefaultRestartMax},
		{"server max_restarts", *s.MaxRestarts, config.DefaultMaxRestarts},
		{"server restart_window", s.RestartWindow.Std(), config.DefaultRestartWindow},
		{"server circuit failures", s.CircuitBreaker.Failures, config.DefaultBreakerFailures},
		{"server circuit cooldown", s.CircuitBreaker.Cooldown.Std(), config.DefaultBreakerCooldown},
		{"server circuit successes", s.CircuitBreaker.Successes, config.DefaultBreakerSuccess},
		{"plugin name", p.Name, "p"},
		{"plugin path", p.Path, filepath.Join(dir, "p.wasm")},
		{"plugin isolation", p.Isolation, "pooled"},
		{"plugin health_interval", p.HealthInterval.Std(), config.DefaultHealthInterval},
		{"plugin mounts", len(p.Mounts), 1},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if m := p.Mounts[0]; m.Host != filepath.Join(dir, "data") || !m.ReadWrite {
		t.Errorf("mount = %+v", m)
	}
	// Validate is idempotent: nothing is appended twice.
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(p.Mounts) != 1 {
		t.Errorf("a second Validate left %d mounts, want 1", len(p.Mounts))
	}

	bad := &config.Config{
		Dir: dir,
		Servers: map[string]*config.Server{
			"web": {URL: "http://127.0.0.1:1/mcp", Args: []string{"x"}},
		},
		Plugins: map[string]*config.Plugin{
			"p": {Path: "p.wasm", Instances: -1, Memory: 1000, Timeout: -1},
		},
	}
	err := bad.Validate()
	var list config.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Validate = %v, want a config.ErrorList", err)
	}
	want := map[string]bool{"servers.web.args": false, "plugins.p.instances": false, "plugins.p.memory": false, "plugins.p.timeout": false}
	for _, e := range list {
		if _, ok := want[e.Key]; ok {
			want[e.Key] = true
		}
		if e.Line != 0 {
			t.Errorf("%s: line %d for a Config built in Go, want 0", e.Key, e.Line)
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("no error for %s in:\n%v", k, err)
		}
	}
	if bad.Validated() {
		t.Error("a Config that failed Validate reports Validated")
	}
}

// TestLoadThenValidate: Validate on a loaded Config changes nothing.
func TestLoadThenValidate(t *testing.T) {
	cfg, err := config.Parse([]byte(`
[host]
audit_redact = ["^x-"]
[plugins.p]
path = "p.wasm"
allowed_paths = { "/a" = "ro:a", "/b" = "rw:b" }
`), &config.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Validated() {
		t.Fatal("a parsed Config is not Validated")
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if n := len(cfg.Plugins["p"].Mounts); n != 2 {
		t.Errorf("mounts = %d, want 2", n)
	}
	if n := len(cfg.Host.AuditRedactRE); n != 1 {
		t.Errorf("audit_redact regexps = %d, want 1", n)
	}
}

// TestPromptAndResourceKeys: [policy] and profiles take prompts,
// deny_prompts, resources and deny_resources; an explicit default governs
// every kind, an inferred one each kind by its own allow list.
func TestPromptAndResourceKeys(t *testing.T) {
	cfg, err := config.Parse([]byte(`
[policy]
allow     = ["fs__*"]
resources = ["fs:file:///docs/**"]
[profiles.r]
prompts        = ["fs__*"]
deny_resources = ["*:file:///docs/secret/**"]
`), &config.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Policy
	if p.Default != config.PolicyDeny || p.ResourcesDefault != config.PolicyDeny || p.PromptsDefault != config.PolicyAllow {
		t.Errorf("defaults tools %q resources %q prompts %q; want deny, deny, allow (inferred per kind)", p.Default, p.ResourcesDefault, p.PromptsDefault)
	}
	if len(p.ResourceRules) != 1 || len(cfg.Profiles["r"].PromptRules) != 1 || len(cfg.Profiles["r"].DenyResourceRules) != 1 {
		t.Errorf("rules not compiled: %+v %+v", p, cfg.Profiles["r"])
	}
	cfg, err = config.Parse([]byte("[policy]\ndefault = \"deny\"\n"), &config.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Policy.PromptsDefault != config.PolicyDeny || cfg.Policy.ResourcesDefault != config.PolicyDeny {
		t.Errorf("explicit default deny: prompts %q resources %q", cfg.Policy.PromptsDefault, cfg.Policy.ResourcesDefault)
	}
	_, err = config.Parse([]byte("[policy]\nresources = [\"file:///x\"]\n"), &config.Options{Name: "t.toml", Dir: t.TempDir()})
	want := `t.toml:2: policy.resources: element 1 "file:///x" is not BACKEND:URI`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v; want %s", err, want)
	}
}

func TestLogLevelAndRoots(t *testing.T) {
	good := `
[host]
roots = ["file:///work", "file://localhost/data"]
[servers.a]
command = "x"
log_level = "notice"
roots = []
`
	cfg, err := config.Parse([]byte(good), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Servers["a"].LogLevel != "notice" || cfg.Servers["a"].Roots == nil || len(cfg.Host.Roots) != 2 {
		t.Errorf("%+v %+v", cfg.Host, cfg.Servers["a"])
	}
	bad := `
[host]
roots = ["/work", "file:///a", "file:///a", "http://x/y", "file://other/z"]
[servers.a]
command = "x"
log_level = "verbose"
roots = ["file:relative"]
`
	_, err = config.Parse([]byte(bad), nil)
	for _, want := range []string{
		`element 1 "/work" is not a file:// URI`,
		`element 3 "file:///a" is listed twice`,
		`element 4 "http://x/y" is not`,
		`element 5 "file://other/z" is not`,
		`log_level: "verbose" is not an MCP log level: use one of debug, info, notice, warning, error, critical, alert, emergency`,
		`roots: element 1 "file:relative" is not`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nlacks %q", err, want)
		}
	}
}
