package main

import (
	"strings"
	"testing"
)

// optionalConfig has a profile with the three tiers: fixture required, one
// backend that fails to start and one disabled, both optional; and policy
// globs of which two fit no backend.
const optionalConfig = `
[servers.fixture]
command = "@FIXTURE@"

[servers.down]
command = "/bin/sh"
args = ["-c", "exit 3"]
max_restarts = 0

[servers.off]
command = "@FIXTURE@"
enabled = false

[policy]
allow = ["fixture__*", "*__echo", "github__*"]
deny = ["slak__*"]

[profiles.p]
requires = ["fixture"]
optional = ["down", "off"]
`

// TestCLICheckOptional: check --profile shows an optional backend's state
// as information, never as a warning, and the host logs no warning for
// it; the profile's calls are not blocked (exit 0). check warns about the
// policy globs that fit no backend, with their line, and not about the
// others.
func TestCLICheckOptional(t *testing.T) {
	cfg := writeConfig(t, optionalConfig)
	code, out, errs := runCLI("--config", cfg, "check", "--profile", "p")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"requires fixture: ready\n",
		"optional down: not ready (",
		"optional off: disabled (enabled = false)\n",
		`toolhost.toml:15: policy.allow[2] "github__*": matches no tool of any configured backend`,
		`toolhost.toml:16: policy.deny[0] "slak__*": matches no tool`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out+errs, "\n") {
		if strings.Contains(line, "optional") && strings.Contains(strings.ToLower(line), "warn") {
			t.Errorf("an optional backend is warned about: %q", line)
		}
		if strings.HasPrefix(line, "warning: ") && (strings.Contains(line, `"fixture__*"`) || strings.Contains(line, `"*__echo"`)) {
			t.Errorf("a glob that fits a backend is warned about: %q", line)
		}
	}
	if n := strings.Count(out, "warning: "); n != 2 {
		t.Errorf("%d warnings, want 2:\n%s", n, out)
	}
}
