package host_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/serverlog"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// logHost starts a Host on toml (@FIXTURE@, @LOGS@ replaced) whose
// console logger is at Error: the files must not depend on it.
func logHost(t *testing.T, toml, logs string) *host.Host {
	t.Helper()
	toml = strings.ReplaceAll(toml, "@FIXTURE@", testutil.Fixture(t))
	toml = strings.ReplaceAll(toml, "@LOGS@", logs)
	cfg, err := config.Parse([]byte(toml), &config.Options{Name: "test.toml"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(context.Background(), cfg, &host.Options{
		Logger:         hclog.New(&hclog.LoggerOptions{Name: "host", Output: testWriter{t}, Level: hclog.Error}),
		TerminateGrace: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// A stdio server's log file holds its stderr (a secret it echoes
// redacted), its notifications/message, and its lifecycle: a crash with
// its exit status, the restart, ready again.
func TestLogFileHoldsStderrMessagesAndLifecycle(t *testing.T) {
	logs := filepath.Join(t.TempDir(), "logs")
	h := logHost(t, `
[host]
log_directory = "@LOGS@"

[servers.fx]
command = "/bin/sh"
args = ["-c", "echo \"starting with key $API_KEY\" >&2; exec @FIXTURE@ -client -protocol 2025-11-25 -crash-after 2"]
env = { API_KEY = "sk-live-abcdef123456" }
log_level = "info"
restart_backoff = { min = "50ms", max = "100ms" }
`, logs)
	events := newEventLog()
	unsubscribe := h.Subscribe(events.add)
	ctx := context.Background()
	if _, err := h.CallTool(ctx, "fx__log", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CallTool(ctx, "fx__echo", map[string]any{"text": "hi"}); err != nil {
		t.Fatal(err)
	}
	_, _ = h.CallTool(ctx, "fx__echo", map[string]any{"text": "crash"}) // the third call: exit status 9
	events.await(t, "restarted", func(ev host.Event) bool {
		return ev.Backend == "fx" && ev.Kind == host.EventState && ev.State == host.StateReady
	})
	unsubscribe()
	// Status (served to every REST client and the dashboard) holds the
	// loss's error with the server's last stderr lines: scrubbed too.
	for _, st := range h.Status() {
		if st.Name == "fx" && !strings.Contains(st.LastError, "starting with key [REDACTED]") || strings.Contains(st.LastError, "sk-live-abcdef123456") {
			t.Fatalf("Status().LastError = %q: want the stderr line, scrubbed", st.LastError)
		}
	}
	path := filepath.Join(logs, "fx.log")
	want := []string{
		`fx: stderr: line="starting with key [REDACTED]"`, // stderr, scrubbed
		`fx: server log: level=warning data="message at warning" logger=fixture`,
		`crashing at call 3 as asked`,
		`[ERROR] fx: backend lost`, "status 9",
		`fx: restarting after backoff`,
		`fx: backend ready`,
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		s := readLog(t, path)
		for _, w := range want {
			if !strings.Contains(s, w) {
				return false
			}
		}
		return strings.Count(s, "backend ready") >= 2
	}, "the log file holds stderr, messages and the lifecycle", logDump{t, path})
	s := readLog(t, path)
	if strings.Contains(s, "sk-live-abcdef123456") {
		t.Fatalf("the secret is in the log file:\n%s", s)
	}
	if strings.Contains(s, "\x1b") {
		t.Fatalf("a raw ESC from the server reached the file")
	}
	lines, err := h.Logs("fx", 3)
	if err != nil || len(lines) != 3 {
		t.Fatalf("Logs(fx, 3) = %q, %v", lines, err)
	}
	if !strings.Contains(s, lines[2]) {
		t.Fatalf("Logs' last line %q is not in the file", lines[2])
	}
	if _, err := h.Logs("nope", 3); !errors.Is(err, host.ErrUnknownBackend) {
		t.Fatalf("Logs(nope): %v, want ErrUnknownBackend", err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if s := readLog(t, path); !strings.HasSuffix(strings.TrimSpace(s), "fx: backend stopped") {
		t.Fatalf("the file does not end with the backend's stop:\n%s", s)
	}
	for _, p := range []string{logs, path} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Fatalf("%s: %v, %v: want no access for group and others", p, fi.Mode(), err)
		}
	}
}

// A stderr flood rotates the file at log_max_size and keeps log_max_files.
func TestLogFileRotatesUnderStderrFlood(t *testing.T) {
	logs := t.TempDir()
	h := logHost(t, `
[host]
log_directory = "@LOGS@"
log_max_size = "1MiB"
log_max_files = 2

[servers.flood]
command = "/bin/sh"
args = ["-c", "i=0; while [ $i -lt 4000 ]; do echo \"flood $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\" >&2; i=$((i+1)); done; echo flood-done >&2; exec @FIXTURE@"]
`, logs)
	_ = h
	testutil.Eventually(t, 60*time.Second, func() bool {
		lines, err := h.Logs("flood", 200)
		return err == nil && strings.Contains(strings.Join(lines, "\n"), "flood-done")
	}, "the flood is logged")
	testutil.Eventually(t, 10*time.Second, func() bool {
		files, _ := serverlog.Files(logs, "flood")
		return len(files) == 2
	}, "log_max_files = 2 files kept")
	files, _ := serverlog.Files(logs, "flood")
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil || fi.Size() > 1<<20 {
			t.Fatalf("%s: %d bytes (%v): over log_max_size", f, fi.Size(), err)
		}
	}
	// The oldest lines were rotated out and removed.
	all := readLog(t, files[0]) + readLog(t, files[1])
	if strings.Contains(all, "flood 0 ") || !strings.Contains(all, "flood 3999 ") {
		t.Fatalf("want the oldest lines gone and the newest kept")
	}
}

func TestLogDirectoryErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte("[host]\nlog_directory = \""+file+"/logs\"\n"), &config.Options{Name: "test.toml"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = host.New(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "[host] log_directory") {
		t.Fatalf("New with a log_directory under a file: %v, want an error naming the key", err)
	}
	h := logHost(t, "[servers.fx]\ncommand = \"@FIXTURE@\"\n", "")
	if _, err := h.Logs("fx", 10); !errors.Is(err, host.ErrNoLogs) {
		t.Fatalf("Logs without log_directory: %v, want ErrNoLogs", err)
	}
}

// logDump prints a log file when Eventually fails.
type logDump struct {
	t    *testing.T
	path string
}

func (d logDump) String() string { return "\n" + readLog(d.t, d.path) }

// A sandboxed server's egress denial reaches its log file (the sandbox's
// sub-logger is teed too).
func TestLogFileHoldsSandboxDenials(t *testing.T) {
	needSandbox(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("/usr/bin/python3 not found: the test's server is a Python script")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fetch.py"), []byte(pyFetchServer), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := t.TempDir()
	h := logHost(t, `
[host]
log_directory = "@LOGS@"

[servers.net]
command = "/usr/bin/python3"
args = ["/srv/fetch.py"]
sandbox = "strict"
allowed_paths = { "/srv" = "ro:`+dir+`" }
allowed_hosts = ["127.0.0.1:1"]
`, logs)
	if _, err := h.CallTool(context.Background(), "net__fetch", map[string]any{"url": "http://denied.example/"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(logs, "net.log")
	testutil.Eventually(t, 30*time.Second, func() bool {
		s := readLog(t, path)
		return strings.Contains(s, "net.sandbox: sandbox denied egress") && strings.Contains(s, "denied.example")
	}, "the denial in the log file", logDump{t, path})
}

// A plugin's log calls and stderr reach its file, and a backend added by
// Apply logs to its own file with the new configuration's secrets
// redacted.
func TestLogFilePluginsAndApply(t *testing.T) {
	echo := wasmbuild.Build(t, filepath.Join(testutil.Root(), "testdata", "plugins"), "./echo")
	logs := t.TempDir()
	base := `
[host]
log_directory = "` + logs + `"

[plugins.echo]
path = "` + echo + `"
config = { api_key = "plug-secret-123456" }
`
	h := logHost(t, base, logs)
	ctx := context.Background()
	if _, err := h.CallTool(ctx, "echo__log", map[string]any{"text": "plugin says plug-secret-123456"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CallTool(ctx, "echo__print", map[string]any{"text": "printed to stderr"}); err != nil {
		t.Fatal(err)
	}
	echoLog := filepath.Join(logs, "echo.log")
	testutil.Eventually(t, 30*time.Second, func() bool {
		s := readLog(t, echoLog)
		return strings.Contains(s, "plugin says [REDACTED]") && strings.Contains(s, "printed to stderr")
	}, "the plugin's log and stderr in its file", logDump{t, echoLog})

	added := base + `
[servers.late]
command = "/bin/sh"
args = ["-c", "echo \"late with $LATE_TOKEN\" >&2; exec @FIXTURE@"]
env = { LATE_TOKEN = "late-secret-abcdef" }
`
	if _, err := h.Apply(ctx, parseFixtureConfig(t, added)); err != nil {
		t.Fatal(err)
	}
	lateLog := filepath.Join(logs, "late.log")
	testutil.Eventually(t, 30*time.Second, func() bool {
		return strings.Contains(readLog(t, lateLog), `late with [REDACTED]`)
	}, "the added backend's file, its secret redacted", logDump{t, lateLog})
	if s := readLog(t, echoLog) + readLog(t, lateLog); strings.Contains(s, "secret-") {
		t.Fatalf("a secret in the log files:\n%s", s)
	}
}
