package main

import (
	"strings"
	"testing"
)

// TestGlobalFlagsAfterCommand: --config and --log-level work after the
// command as well as before it, in both spellings, and a subcommand flag's
// value that looks like a global flag stays that flag's value.
func TestGlobalFlagsAfterCommand(t *testing.T) {
	cfg := writeConfig(t, `
[servers.fixture]
command = "@FIXTURE@"
`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--config", cfg}, "fixture"},
		{[]string{"tools", "--json", "--config=" + cfg, "-log-level", "off"}, `"fixture__echo"`},
		{[]string{"call", "fixture__echo", "--args", `{"text":"--config"}`, "--config", cfg}, "--config"},
		{[]string{"--log-level", "off", "call", "--config", cfg, "fixture__echo", "--args={\"text\":\"hi\"}"}, "hi"},
	} {
		code, stdout, stderr := runCLI(c.args...)
		if code != exitOK || !strings.Contains(stdout, c.want) {
			t.Errorf("toolhost %s: exit %d, stdout %q, stderr %q; want 0 and %q", strings.Join(c.args, " "), code, stdout, stderr, c.want)
		}
	}
	if code, _, stderr := runCLI("check", "--config"); code != exitUsage || !strings.Contains(stderr, "needs an argument") {
		t.Errorf("check --config without a value: exit %d, %q", code, stderr)
	}
}
