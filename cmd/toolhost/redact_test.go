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
