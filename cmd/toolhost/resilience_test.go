package main

import (
	"strings"
	"testing"
)

// TestCLICheckResilience: toolhost check lists each [tools.NAME]'s
// timeout, max_retries, backoff and fallbacks in order.
func TestCLICheckResilience(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	cfg := writeConfig(t, `
[servers.fixture]
command = "@FIXTURE@"

[tools.fixture__echo]
timeout = "5s"
max_retries = 1
backoff = { initial = "50ms", max = "2s" }
fallback = ["fixture__add", "fixture__sleep"]
`)
	code, stdout, stderr := runCLI("--config", cfg, "check")
	want := "tool fixture__echo: timeout 5s; at most 1 retries; backoff 50ms up to 2s; falls back to fixture__add, then fixture__sleep"
	if code != 0 || !strings.Contains(stdout, want) {
		t.Fatalf("check: exit %d\n%s\n%s\nwant the line %q", code, stdout, stderr, want)
	}
}
