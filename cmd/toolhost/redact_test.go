package main

import (
	"strings"
	"testing"
)

// TestURLSecretsRedacted: a server URL's userinfo and query values never
// appear in check, status (table and --json), tools, call errors or the
// logs, whether the server is unreachable or answers with an error.
func TestURLSecretsRedacted(t *testing.T) {
	t.Setenv("TEST_KEY", "s3cretkey")
	cfg := writeConfig(t, `
[servers.down]
url = "http://user:s3cretpw@127.0.0.1:1/mcp?api_key=${TEST_KEY}"
max_restarts = 0

[servers.fixture]
command = "@FIXTURE@"
`)
	for _, args := range [][]string{
		{"check"},
		{"status"},
		{"status", "--json"},
		{"tools"},
		{"call", "down__echo"},
	} {
		_, stdout, stderr := runCLI(append([]string{"--config", cfg, "--log-level", "trace"}, args...)...)
		out := stdout + stderr
		if strings.Contains(out, "s3cret") {
			t.Errorf("toolhost %s shows a secret:\n%s", strings.Join(args, " "), out)
		}
		if args[0] != "tools" && !strings.Contains(out, "127.0.0.1:1/mcp?api_key=REDACTED") && !strings.Contains(out, `backend "down"`) {
			t.Errorf("toolhost %s: the URL should still be recognisable:\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestEnvSecretsRedactedInLogs: a server that writes a secret of its env
// to stderr and dies has its stderr lines and its loss (which quotes the
// last lines) logged; neither the log on stderr nor status shows the
// secret.
func TestEnvSecretsRedactedInLogs(t *testing.T) {
	t.Setenv("TEST_API_KEY", "sk-live-0123456789abcdef")
	cfg := writeConfig(t, `
[servers.leaky]
command = "/bin/sh"
args = ["-c", "echo \"using key $API_KEY\" >&2; exit 3"]
env = { API_KEY = "${TEST_API_KEY}" }
max_restarts = 0
`)
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"call", "leaky__echo"}} {
		_, stdout, stderr := runCLI(append([]string{"--config", cfg, "--log-level", "trace"}, args...)...)
		out := stdout + stderr
		if strings.Contains(out, "sk-live-0123456789abcdef") {
			t.Errorf("toolhost %s shows the env secret:\n%s", strings.Join(args, " "), out)
		}
		if !strings.Contains(out, "using key [REDACTED]") {
			t.Errorf("toolhost %s: the server's stderr line should still be there, scrubbed:\n%s", strings.Join(args, " "), out)
		}
	}
}
