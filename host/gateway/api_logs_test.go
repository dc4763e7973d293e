package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/gateway"
	"github.com/toolhost/toolhost/internal/testutil"
)

const logsConfig = `
[host]
log_directory = "@LOGS@"

[servers.fx]
command = "/bin/sh"
args = ["-c", "echo 'fx says <script>alert(1)</script> with sk-secret-0123456789' >&2; exec @FIXTURE@"]
env = { API_KEY = "sk-secret-0123456789" }

[servers.other]
command = "/bin/sh"
args = ["-c", "echo other-line >&2; exec @FIXTURE@"]

[servers.quiet]
command = "@FIXTURE@"

[profiles.review]
allow = ["fx__echo"]

[serve.clients.alice]
token   = "alice-token-0123456789"
profile = "review"

[serve.clients.root]
token = "root-token-0123456789ab"
admin = true
`

// logsGateway serves a Host with log files through a Gateway whose Logs
// is Host.Logs, as toolhost serve sets it.
func logsGateway(t *testing.T, src string, logs func(string, int) ([]string, error)) (*host.Host, string) {
	t.Helper()
	src = strings.ReplaceAll(src, "@FIXTURE@", testutil.Fixture(t))
	src = strings.ReplaceAll(src, "@LOGS@", filepath.Join(t.TempDir(), "logs"))
	cfg, err := config.Parse([]byte(src), &config.Options{Name: "test.toml"})
	if err != nil {
		t.Fatal(err)
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "gw", Output: io.Discard})
	h, err := host.New(context.Background(), cfg, &host.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if logs == nil {
		logs = h.Logs
	}
	g, err := gateway.New(h, &gateway.Options{Logger: logger, Logs: logs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	return h, srv.URL
}

func getLogs(t *testing.T, base, token, path string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("GET", base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&body); err != nil {
		t.Fatalf("GET %s: %d, body not JSON: %v", path, resp.StatusCode, err)
	}
	return resp.StatusCode, body
}

func TestServerLogsEndpoint(t *testing.T) {
	_, base := logsGateway(t, logsConfig, nil)
	const root, alice = "root-token-0123456789ab", "alice-token-0123456789"
	var lines []any
	testutil.Eventually(t, time.Minute, func() bool {
		code, body := getLogs(t, base, root, "/api/v1/servers/fx/logs")
		lines, _ = body["lines"].([]any)
		return code == 200 && body["server"] == "fx" && strings.Contains(strings.Join(strs(lines), "\n"), "fx says")
	}, "fx's stderr line through the endpoint")
	all := strings.Join(strs(lines), "\n")
	if strings.Contains(all, "sk-secret-0123456789") || !strings.Contains(all, "[REDACTED]") {
		t.Fatalf("lines not redacted: %q", all)
	}
	if code, body := getLogs(t, base, root, "/api/v1/servers/fx/logs?tail=1"); code != 200 || len(body["lines"].([]any)) != 1 {
		t.Fatalf("tail=1: %d %v", code, body)
	}

	for _, tc := range []struct {
		name, token, path string
		code              int
		kind              string
	}{
		{"no token", "", "/api/v1/servers/fx/logs", 401, "unauthenticated"},
		{"bad token", "nope-nope-nope-nope", "/api/v1/servers/fx/logs", 401, "unauthenticated"},
		{"unknown backend", root, "/api/v1/servers/nope/logs", 404, "not_found"},
		{"path traversal", root, "/api/v1/servers/..%2f..%2fetc%2fpasswd/logs", 404, "not_found"},
		{"not logged yet", root, "/api/v1/servers/quiet/logs", 0, ""}, // 200 or no_logs: checked below
		{"profile without the backend", alice, "/api/v1/servers/other/logs", 404, "not_found"},
		{"unknown parameter", root, "/api/v1/servers/fx/logs?lines=3", 400, "bad_request"},
		{"repeated parameter", root, "/api/v1/servers/fx/logs?tail=1&tail=2", 400, "bad_request"},
		{"tail zero", root, "/api/v1/servers/fx/logs?tail=0", 400, "bad_request"},
		{"tail too big", root, "/api/v1/servers/fx/logs?tail=10001", 400, "bad_request"},
		{"tail not a number", root, "/api/v1/servers/fx/logs?tail=1e3", 400, "bad_request"},
		{"tail overflow", root, "/api/v1/servers/fx/logs?tail=99999999999999999999999", 400, "bad_request"},
		{"long value", root, "/api/v1/servers/fx/logs?tail=" + strings.Repeat("1", 300), 400, "bad_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := getLogs(t, base, tc.token, tc.path)
			if tc.code == 0 {
				if code != 200 && (code != 404 || errKind(body) != "no_logs") {
					t.Fatalf("%d %v: want 200 or 404 no_logs", code, body)
				}
				return
			}
			if code != tc.code || errKind(body) != tc.kind {
				t.Fatalf("%d %v, want %d %q", code, body, tc.code, tc.kind)
			}
		})
	}
	// alice's profile allows fx__echo: she may read fx's log.
	if code, body := getLogs(t, base, alice, "/api/v1/servers/fx/logs"); code != 200 {
		t.Fatalf("alice reading fx: %d %v", code, body)
	}
}

func TestServerLogsWithoutLogDirectory(t *testing.T) {
	src := strings.Replace(logsConfig, "[host]\nlog_directory = \"@LOGS@\"\n", "", 1)
	_, base := logsGateway(t, src, nil)
	code, body := getLogs(t, base, "root-token-0123456789ab", "/api/v1/servers/fx/logs")
	if code != 404 || errKind(body) != "no_logs" {
		t.Fatalf("%d %v, want 404 no_logs", code, body)
	}
}

func strs(v []any) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i], _ = x.(string)
	}
	return out
}
