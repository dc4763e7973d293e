package main

import (
	"bufio"
	"context"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/gateway"
	"github.com/toolhost/toolhost/internal/testutil"
)

// logsConfigFile writes a configuration whose log_directory is logs and
// returns its path.
func logsConfigFile(t *testing.T, logs string) string {
	return writeConfig(t, "[host]\nlog_directory = \""+logs+"\"\n\n[servers.fx]\ncommand = \"@FIXTURE@\"\n")
}

func writeLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLogsCommand(t *testing.T) {
	logs := t.TempDir()
	cfg := logsConfigFile(t, logs)
	writeLines(t, filepath.Join(logs, "fx.log"), "one", "two", "evil \x1b]0;pwned\x07 \x1b[2J three")
	code, out, errOut := runCLI("--config", cfg, "logs", "fx", "-n", "2")
	if code != exitOK || out != "two\nevil \\x1b]0;pwned\\x07 \\x1b[2J three\n" {
		t.Fatalf("logs -n 2: %d %q %q", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"logs"}, exitUsage, "usage: toolhost logs NAME"},
		{[]string{"logs", "fx", "-n", "-1"}, exitUsage, "-n must be from 0"},
		{[]string{"logs", "../etc/passwd"}, exitUsage, "not a backend name"},
		{[]string{"logs", "nope"}, exitUsage, `no backend "nope"`},
		{[]string{"logs", "fx", "--url", "ftp://x"}, exitUsage, "--url must be the serve URL"},
		{[]string{"logs", "../../mcp", "--url", "http://127.0.0.1:1"}, exitUsage, "not a backend name"},
	} {
		code, _, errOut := runCLI(append([]string{"--config", cfg}, tc.args...)...)
		if code != tc.code || !strings.Contains(errOut, tc.err) {
			t.Errorf("%v: %d %q, want %d and %q", tc.args, code, errOut, tc.code, tc.err)
		}
	}
	noDir := writeConfig(t, "[servers.fx]\ncommand = \"@FIXTURE@\"\n")
	if code, _, errOut := runCLI("--config", noDir, "logs", "fx"); code != exitUsage || !strings.Contains(errOut, "log_directory is not set") {
		t.Errorf("logs without log_directory: %d %q", code, errOut)
	}
	empty := logsConfigFile(t, t.TempDir())
	if code, _, errOut := runCLI("--config", empty, "logs", "fx"); code != exitCallError || !strings.Contains(errOut, "no log file") {
		t.Errorf("logs with no file yet: %d %q", code, errOut)
	}
}

// lineReader collects a child's stdout lines.
type lineReader struct {
	mu    sync.Mutex
	lines []string
}

func (r *lineReader) read(rc io.Reader) {
	sc := bufio.NewScanner(rc)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		r.mu.Lock()
		r.lines = append(r.lines, sc.Text())
		r.mu.Unlock()
	}
}

func (r *lineReader) is(want ...string) func() bool {
	return func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return strings.Join(r.lines, "|") == strings.Join(want, "|")
	}
}

func (r *lineReader) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "|")
}

// startLogs runs the toolhost binary with args and collects its stdout;
// it is interrupted (SIGINT) and must exit 0 when stop is called.
func startLogs(t *testing.T, args ...string) (*lineReader, func()) {
	t.Helper()
	cmd := exec.Command(testutil.GoBinary(t, "./cmd/toolhost"), args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &lineReader{}
	done := make(chan struct{})
	go func() { defer close(done); r.read(stdout) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGINT)
		<-done
		if err := cmd.Wait(); err != nil {
			t.Errorf("toolhost %v: %v; stderr: %s", args, err, stderr.String())
		}
	}
	t.Cleanup(func() {
		if !stopped {
			cmd.Process.Kill()
			<-done
			cmd.Wait()
		}
	})
	return r, stop
}

func TestLogsFollowAcrossRotation(t *testing.T) {
	logs := t.TempDir()
	cfg := logsConfigFile(t, logs)
	path := filepath.Join(logs, "fx.log")
	writeLines(t, path, "old", "last")
	r, stop := startLogs(t, "--config", cfg, "logs", "fx", "-f", "-n", "1")
	testutil.Eventually(t, time.Minute, r.is("last"), "the last line first; got ", r.String)
	writeLines(t, path, "new \x1b[31m")
	testutil.Eventually(t, time.Minute, r.is("last", `new \x1b[31m`), "an appended line, escaped; got ", r.String)
	// Rotation as lumberjack does it: rename away, then a new file.
	if err := os.Rename(path, filepath.Join(logs, "fx-2026-01-02T03-04-05.000.log")); err != nil {
		t.Fatal(err)
	}
	writeLines(t, path, "after rotation")
	testutil.Eventually(t, time.Minute, r.is("last", `new \x1b[31m`, "after rotation"), "the new file followed; got ", r.String)
	stop()
}

// logsServe serves a Host with log files over HTTP as toolhost serve
// does, with one admin token.
func logsServe(t *testing.T, logs string) string {
	t.Helper()
	cfg, err := config.Parse([]byte(strings.ReplaceAll(`
[host]
log_directory = "`+logs+`"
[servers.fx]
command = "/bin/sh"
args = ["-c", "echo hello-from-fx >&2; exec @FIXTURE@"]
[serve.clients.ops]
token = "ops-token-0123456789abcdef"
admin = true
`, "@FIXTURE@", testutil.Fixture(t))), &config.Options{Name: "test.toml"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(context.Background(), cfg, &host.Options{Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	g, err := gateway.New(h, &gateway.Options{Logs: h.Logs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestLogsFromServe(t *testing.T) {
	logs := t.TempDir()
	base := logsServe(t, logs)
	t.Setenv("OPS_TOKEN", "ops-token-0123456789abcdef")
	testutil.Eventually(t, time.Minute, func() bool {
		code, out, _ := runCLI("logs", "fx", "--url", base+"/mcp", "--token-env", "OPS_TOKEN", "-n", "50")
		return code == exitOK && strings.Contains(out, "hello-from-fx")
	}, "toolhost logs --url shows fx's stderr")
	if code, _, errOut := runCLI("logs", "fx", "--url", base); code != exitCallError || !strings.Contains(errOut, "401 unauthenticated") {
		t.Fatalf("without a token: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI("logs", "nope", "--url", base, "--token-env", "OPS_TOKEN"); code != exitCallError || !strings.Contains(errOut, "404 not_found") {
		t.Fatalf("unknown backend: %d %q", code, errOut)
	}

	// -f polls: a line appended to the file shows within a poll or two.
	r, stop := startLogs(t, "logs", "fx", "--url", base, "--token-env", "OPS_TOKEN", "-f", "-n", "1")
	testutil.Eventually(t, time.Minute, func() bool { return r.String() != "" }, "the last line first")
	writeLines(t, filepath.Join(logs, "fx.log"), "appended-1", "appended-2")
	testutil.Eventually(t, time.Minute, func() bool {
		return strings.HasSuffix(r.String(), "|appended-1|appended-2")
	}, "-f --url shows the new lines once; got ", r.String)
	stop()
}

func TestNewLines(t *testing.T) {
	for _, tc := range []struct {
		prev, cur, want []string
		gap             bool
	}{
		{nil, []string{"a"}, []string{"a"}, true},
		{[]string{"a", "b"}, []string{"a", "b", "c"}, []string{"c"}, false},
		{[]string{"a", "b"}, []string{"b", "c", "d"}, []string{"c", "d"}, false},
		{[]string{"a", "b"}, []string{"a", "b"}, []string{}, false},
		{[]string{"x", "b"}, []string{"a", "b", "c"}, []string{"a", "b", "c"}, true},
		{[]string{"a", "b"}, []string{"x", "y"}, []string{"x", "y"}, true},
	} {
		got, gap := newLines(tc.prev, tc.cur)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") || gap != tc.gap {
			t.Errorf("newLines(%q, %q) = %q, %v; want %q, %v", tc.prev, tc.cur, got, gap, tc.want, tc.gap)
		}
	}
}

// The README's "Server logs" example: its [host] table loads, and its
// first commands print a backend's log.
func TestServerLogsReadme(t *testing.T) {
	blocks := mdBlocks(t, filepath.Join(testutil.Root(), "README.md"))
	toml := block(t, blocks, "Server logs", "toml", 0)
	cfg := writeConfig(t, toml+"\n[servers.fixture]\ncommand = \"@FIXTURE@\"\n")
	if code, out, errOut := runCLI("--config", cfg, "call", "fixture__add", "--args", `{"a":1,"b":2}`); code != exitOK {
		t.Fatalf("call: %d %s %s", code, out, errOut)
	}
	for _, line := range strings.Split(block(t, blocks, "Server logs", "sh", 0), "\n")[:2] {
		args := strings.Fields(strings.TrimSpace(strings.Split(line, "#")[0]))
		if args[0] != "toolhost" {
			t.Fatalf("README line %q", line)
		}
		if args[len(args)-1] == "-f" {
			continue // followed in TestLogsFollowAcrossRotation
		}
		code, out, errOut := runCLI(append([]string{"--config", cfg}, args[1:]...)...)
		if code != exitOK || !strings.Contains(out, "fixture: backend ready") {
			t.Fatalf("%s: %d\n%s\n%s", line, code, out, errOut)
		}
	}
}
