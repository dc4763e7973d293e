package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/gateway"
	"github.com/toolhost/toolhost/internal/testutil"
)

// fakeServe is an httptest server answering the REST API's documented
// shapes (host/gateway/routes.go): what a running toolhost serve answers
// once the API is built. It records the requests it got.
type fakeServe struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []string // "METHOD ESCAPED-PATH AUTHORIZATION"
}

func newFakeServe(t *testing.T, h http.HandlerFunc) *fakeServe {
	f := &fakeServe{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.reqs = append(f.reqs, r.Method+" "+r.URL.EscapedPath()+" "+r.Header.Get("Authorization"))
		f.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServe) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

func fakeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func apiErr(w http.ResponseWriter, code int, kind, msg string) {
	fakeJSON(w, code, map[string]any{"error": map[string]string{"kind": kind, "message": msg}})
}

// hostile is a server-supplied string that would drive a terminal: a
// colour, a title change, a line feed and a carriage return.
const hostile = "bad\x1b[31mred\x1b]0;pwned\x07\nnext\rline"

// TestRemoteStatus: status --url prints a running serve's status as the
// local status does (table, --json), sends the token of $TOOLHOST_TOKEN,
// accepts the /mcp URL serve prints, and escapes what the server says.
func TestRemoteStatus(t *testing.T) {
	st := []host.BackendStatus{{Name: "fx", Kind: "stdio", State: host.StateReady, Pid: 42, Tools: 7, Health: host.HealthOff, Circuit: "closed"},
		{Name: "br", Kind: "stdio", State: host.StateFailed, LastError: hostile}}
	f := newFakeServe(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method != http.MethodGet:
			apiErr(w, 404, "not_found", "no route")
		case r.URL.Path == "/api/v1/status":
			fakeJSON(w, 200, st)
		case r.URL.Path == "/api/v1/store":
			fakeJSON(w, 200, host.StoreStatus{URL: "postgres://db/toolhost", Engine: "postgres", Mode: "shared", LastError: hostile})
		case r.URL.Path == "/api/v1/pins":
			fakeJSON(w, 200, gateway.PinList{Pins: []gateway.PinView{},
				Quarantined: []host.QuarantinedTool{{Name: "fx__echo", Backend: "fx", Reason: "its description changed" + hostile}},
				Warnings:    []string{"fx__add: " + hostile}})
		default:
			apiErr(w, 404, "not_found", "no route")
		}
	})
	t.Setenv("TOOLHOST_TOKEN", "secret-token-0123456789")
	code, stdout, stderr := runCLI("status", "--url", f.URL+"/mcp")
	if code != exitOK {
		t.Fatalf("status --url: exit %d, stderr %q", code, stderr)
	}
	// And what the local status prints under the table: the store, the
	// quarantined tools and the tool-poisoning warnings.
	for _, want := range []string{"BACKEND", "fx", "stdio", "ready", "42", "br", "failed",
		"store: postgres postgres://db/toolhost (shared)", "QUARANTINED TOOL", "fx__echo", "its description changed", "warning: fx__add: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status --url printed no %q:\n%s", want, stdout)
		}
	}
	if strings.ContainsAny(stdout, "\x1b\x07\r") || strings.Contains(stdout, "\nnext") {
		t.Errorf("status --url printed the server's control characters raw: %q", stdout)
	}
	if got := f.requests(); !slices.Equal(got, []string{"GET /api/v1/status Bearer secret-token-0123456789",
		"GET /api/v1/store Bearer secret-token-0123456789", "GET /api/v1/pins Bearer secret-token-0123456789"}) {
		t.Errorf("requests = %q", got)
	}

	code, stdout, stderr = runCLI("status", "--json", "--url", f.URL)
	var got []host.BackendStatus
	if code != exitOK || json.Unmarshal([]byte(stdout), &got) != nil || len(got) != 2 || got[1].LastError != hostile {
		t.Errorf("status --json --url: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestRemoteToken: the token comes from the variable --token-env names
// (never a flag); a named variable that is unset, and a token with a line
// break (a header injection), are usage errors; with no token set at all,
// no Authorization header is sent (a loopback serve without clients).
func TestRemoteToken(t *testing.T) {
	f := newFakeServe(t, func(w http.ResponseWriter, r *http.Request) { fakeJSON(w, 200, []host.BackendStatus{}) })
	t.Setenv("MY_TOKEN", "other-token-0123456789")
	if code, _, stderr := runCLI("status", "--url", f.URL, "--token-env", "MY_TOKEN"); code != exitOK {
		t.Fatalf("--token-env MY_TOKEN: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI("status", "--url", f.URL, "--token-env", "NO_SUCH_TOKEN_VAR"); code != exitUsage || !strings.Contains(stderr, "NO_SUCH_TOKEN_VAR: the variable is not set") {
		t.Errorf("--token-env of an unset variable: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI("status", "--url", f.URL, "--token", "x"); code != exitUsage {
		t.Errorf("--token as a flag: exit %d, %q; want a usage error", code, stderr)
	}
	t.Setenv("BAD_TOKEN", "abc\r\nX-Injected: 1")
	if code, _, stderr := runCLI("status", "--url", f.URL, "--token-env", "BAD_TOKEN"); code != exitUsage || strings.Contains(stderr, "Injected") {
		t.Errorf("a token with CR LF: exit %d, %q", code, stderr)
	}
	t.Setenv("TOOLHOST_TOKEN", "")
	if code, _, stderr := runCLI("status", "--url", f.URL); code != exitOK {
		t.Errorf("no token: exit %d, %s", code, stderr)
	}
	// (status also asks for the store and the pins, with the same token.)
	want := []string{"GET /api/v1/status Bearer other-token-0123456789", "GET /api/v1/store Bearer other-token-0123456789",
		"GET /api/v1/pins Bearer other-token-0123456789", "GET /api/v1/status ", "GET /api/v1/store ", "GET /api/v1/pins "}
	if got := f.requests(); !slices.Equal(got, want) {
		t.Errorf("requests = %q, want %q", got, want)
	}
}

// TestRemoteBadURL: --url must be an http(s) URL without user, query or
// fragment; each is a usage error, and nothing is sent.
func TestRemoteBadURL(t *testing.T) {
	for _, u := range []string{"127.0.0.1:8808", "ftp://127.0.0.1/", "http://user:pw@127.0.0.1:1", "http://127.0.0.1:1/?a=b", "http://127.0.0.1:1/#x", "http://", "http://[::1"} {
		for _, cmd := range [][]string{{"status"}, {"reload"}, {"restart", "fx"}} {
			code, _, stderr := runCLI(append(cmd, "--url", u)...)
			if code != exitUsage || !strings.Contains(stderr, "--url") {
				t.Errorf("%s --url %q: exit %d, %q", cmd[0], u, code, stderr)
			}
		}
	}
}

// TestRemoteReload: reload --url prints what the serve's reload did (or
// its JSON); an invalid configuration prints every problem with its
// position, escaped, and exits 2; 401/403 exit 4; a serve without the
// endpoint (501) exits 3 saying so; without --url it is a usage error.
func TestRemoteReload(t *testing.T) {
	var answer func(w http.ResponseWriter)
	f := newFakeServe(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v1/reload" {
			apiErr(w, 404, "not_found", "no route")
			return
		}
		answer(w)
	})
	answer = func(w http.ResponseWriter) {
		fakeJSON(w, 200, host.ApplyReport{Added: []string{"new"}, Removed: []string{"gone"}, Changed: []string{"chg"}, Unchanged: []string{"fx", hostile}, Policy: true})
	}
	code, stdout, stderr := runCLI("reload", "--url", f.URL)
	if code != exitOK {
		t.Fatalf("reload: exit %d, %s", code, stderr)
	}
	for _, want := range []string{"added      new\n", "removed    gone\n", "changed    chg\n", "unchanged  fx, ", "policy     changed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("reload printed no %q:\n%s", want, stdout)
		}
	}
	if strings.ContainsAny(stdout, "\x1b\x07\r") {
		t.Errorf("reload printed control characters raw: %q", stdout)
	}
	code, stdout, _ = runCLI("reload", "--url", f.URL, "--json")
	var rep host.ApplyReport
	if code != exitOK || json.Unmarshal([]byte(stdout), &rep) != nil || !slices.Equal(rep.Added, []string{"new"}) {
		t.Errorf("reload --json: exit %d, %q", code, stdout)
	}

	answer = func(w http.ResponseWriter) {
		fakeJSON(w, 400, map[string]any{
			"error": map[string]string{"kind": "invalid_config", "message": "toolhost.toml:6: servers.keep.bogus: unknown key\ntoolhost.toml:10: ..."},
			"problems": []map[string]any{
				{"file": "toolhost.toml", "line": 6, "key": "servers.keep.bogus", "message": "unknown key"},
				{"line": 10, "key": "servers.other.startup_timeout", "message": "invalid duration " + hostile},
			},
		})
	}
	code, _, stderr = runCLI("reload", "--url", f.URL)
	if code != exitUsage {
		t.Errorf("reload of an invalid configuration: exit %d, want %d", code, exitUsage)
	}
	for _, want := range []string{"invalid_config", "  toolhost.toml:6: servers.keep.bogus: unknown key\n", "  line 10: servers.other.startup_timeout: invalid duration bad"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("reload's errors lack %q:\n%s", want, stderr)
		}
	}
	if strings.ContainsAny(stderr, "\x1b\x07\r") {
		t.Errorf("reload printed the server's control characters raw: %q", stderr)
	}

	for _, c := range []struct {
		status int
		kind   string
		code   int
		want   string
	}{
		{401, "unauthenticated", exitDenied, "unauthenticated: a [serve.clients.NAME] bearer token is required"},
		{403, "forbidden", exitDenied, "forbidden: this action needs"},
		{501, "not_implemented", exitCallError, "does not offer this yet"},
		{500, "internal", exitCallError, "internal: " + strings.Split(hostile, "\n")[0][:3]},
	} {
		answer = func(w http.ResponseWriter) {
			msg := map[int]string{401: "a [serve.clients.NAME] bearer token is required", 403: "this action needs admin", 501: "not implemented yet", 500: hostile}[c.status]
			apiErr(w, c.status, c.kind, msg)
		}
		code, _, stderr := runCLI("reload", "--url", f.URL)
		if code != c.code || !strings.Contains(stderr, c.want) || strings.ContainsAny(stderr, "\x1b\x07\r") {
			t.Errorf("reload answered %d: exit %d, stderr %q; want %d and %q", c.status, code, stderr, c.code, c.want)
		}
	}

	if code, _, stderr := runCLI("reload"); code != exitUsage || !strings.Contains(stderr, "reload needs a running toolhost serve") {
		t.Errorf("reload without --url: exit %d, %q", code, stderr)
	}
}

// TestRemoteRestart: restart NAME --url posts to the backend's restart
// endpoint with NAME escaped as one path segment; an unknown backend
// (404) exits 3 with the API's message escaped; without --url it is a
// usage error that says restart needs a running serve.
func TestRemoteRestart(t *testing.T) {
	f := newFakeServe(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.EscapedPath() == "/api/v1/servers/fx/restart" {
			fakeJSON(w, 200, host.BackendStatus{Name: "fx", Kind: "stdio", State: host.StateReady, Restarts: 1})
			return
		}
		apiErr(w, 404, "not_found", "unknown backend "+hostile)
	})
	code, stdout, stderr := runCLI("restart", "fx", "--url", f.URL)
	if code != exitOK || !strings.Contains(stdout, "restarted fx") || !strings.Contains(stdout, "ready") {
		t.Errorf("restart fx: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = runCLI("restart", "../reload", "--url", f.URL)
	if code != exitCallError || !strings.Contains(stderr, "not_found: unknown backend") || strings.ContainsAny(stderr, "\x1b\x07\r") {
		t.Errorf("restart of an unknown backend: exit %d, %q", code, stderr)
	}
	if got := f.requests(); len(got) != 2 || !strings.HasPrefix(got[1], "POST /api/v1/servers/..%2Freload/restart ") {
		t.Errorf("requests = %q; want the name as one escaped segment", got)
	}
	if code, _, stderr := runCLI("restart", "fx"); code != exitUsage || !strings.Contains(stderr, "restart needs a running toolhost serve") {
		t.Errorf("restart without --url: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI("restart", "--url", f.URL); code != exitUsage {
		t.Errorf("restart without NAME: exit %d, %q", code, stderr)
	}
}

// TestRemoteHostileServer: what a server that is not a well-behaved
// toolhost serve can do is bounded: a huge body is not read past 16 MiB, a
// redirect is not followed (the token goes only where --url says), a
// non-JSON error page is reported with its status, and a serve that is not
// there is exit 3.
func TestRemoteHostileServer(t *testing.T) {
	other := newFakeServe(t, func(w http.ResponseWriter, r *http.Request) { fakeJSON(w, 200, []host.BackendStatus{}) })
	f := newFakeServe(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/status":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("["))
			chunk := []byte(strings.Repeat(" ", 1<<20))
			for range 20 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "/api/v1/reload":
			http.Redirect(w, r, other.URL+"/api/v1/status", http.StatusTemporaryRedirect)
		default:
			w.WriteHeader(404)
			io.WriteString(w, "404 page not found\n")
		}
	})
	t.Setenv("TOOLHOST_TOKEN", "secret-token-0123456789")
	if code, _, stderr := runCLI("status", "--url", f.URL); code != exitCallError || !strings.Contains(stderr, "larger than 16 MiB") {
		t.Errorf("a 20 MiB answer: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI("reload", "--url", f.URL); code != exitCallError || !strings.Contains(stderr, "307") {
		t.Errorf("a redirect: exit %d, %q", code, stderr)
	}
	if got := other.requests(); len(got) != 0 {
		t.Errorf("the redirect was followed (with the token): %q", got)
	}
	if code, _, stderr := runCLI("restart", "fx", "--url", f.URL); code != exitCallError || !strings.Contains(stderr, "404 Not Found: 404 page not found") || !strings.Contains(stderr, "REST API") {
		t.Errorf("a non-JSON 404: exit %d, %q", code, stderr)
	}
	f.Close()
	if code, _, stderr := runCLI("status", "--url", f.URL); code != exitCallError || !strings.Contains(stderr, "cannot reach toolhost serve at") {
		t.Errorf("no serve: exit %d, %q", code, stderr)
	}
}

// TestRemoteAgainstServe runs the remote commands against a real
// `toolhost serve` child process: status, reload (valid, then invalid:
// exit 2 with the problems' lines), restart, and a client that is not an
// admin refused (exit 4). Until the REST API is built its endpoints
// answer 501, and the test skips.
func TestRemoteAgainstServe(t *testing.T) {
	const src = `
[servers.fx]
command = "@FIXTURE@"
startup_timeout = "5m"

[serve.clients.ops]
token = "ops-token-0123456789"
admin = true

[serve.clients.user]
token = "user-token-0123456789"
`
	cfg := writeConfig(t, src)
	url := startServeCmd(t, cfg)
	t.Setenv("TOOLHOST_TOKEN", "ops-token-0123456789")
	code, stdout, stderr := runCLI("status", "--url", url)
	if code == exitCallError && strings.Contains(stderr, "does not offer this yet") {
		t.Skip("GET /api/v1/status answers 501: the REST API is not built in this tree yet")
	}
	if code != exitOK || !strings.Contains(stdout, "fx") || !strings.Contains(stdout, "ready") {
		t.Fatalf("status --url: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	if err := os.WriteFile(cfg, []byte(strings.Replace(strings.ReplaceAll(src, "@FIXTURE@", testutil.Fixture(t)), "[serve.clients.ops]", "[servers.fx2]\ncommand = \""+testutil.Fixture(t)+"\"\n\n[serve.clients.ops]", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI("reload", "--url", url); code != exitOK || !strings.Contains(stdout, "added      fx2") {
		t.Errorf("reload --url: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := runCLI("status", "--url", url); code != exitOK {
		t.Errorf("status after reload: exit %d, %q", code, stderr)
	}
	if err := os.WriteFile(cfg, []byte("[servers.fx]\ncommand = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI("reload", "--url", url); code != exitUsage || !strings.Contains(stderr, "servers.fx.command") || !regexp.MustCompile(`(:| line )2\b`).MatchString(stderr) {
		t.Errorf("reload --url of an invalid file: exit %d, %q", code, stderr)
	}
	if code, stdout, stderr := runCLI("restart", "fx", "--url", url); code != exitOK || !strings.Contains(stdout, "restarted fx") {
		t.Errorf("restart fx --url: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	t.Setenv("TOOLHOST_TOKEN", "user-token-0123456789")
	if code, _, stderr := runCLI("reload", "--url", url); code != exitDenied || !strings.Contains(stderr, "forbidden") {
		t.Errorf("reload --url as a client that is not an admin: exit %d, %q", code, stderr)
	}
}

var servingRE = regexp.MustCompile(`serving MCP \(Streamable HTTP\) at (http://\S+/mcp)`)

// serveChild is a `toolhost serve` child process.
type serveChild struct {
	*exec.Cmd
	stderr *testutil.Buffer
	url    string // its MCP endpoint
}

// startServeCmd runs `toolhost serve --listen 127.0.0.1:0` on cfg as a
// child process until the test ends, and returns its MCP endpoint URL.
func startServeCmd(t *testing.T, cfg string) string {
	t.Helper()
	return startServeArgs(t, "", "--config", cfg, "serve", "--listen", "127.0.0.1:0").url
}

// startServeArgs runs toolhost with args (a serve command listening on
// HTTP) in dir until the test ends (SIGTERM; it must exit 0), and waits
// until it listens.
func startServeArgs(t *testing.T, dir string, args ...string) *serveChild {
	t.Helper()
	bin := testutil.GoBinary(t, "./cmd/toolhost")
	p := &serveChild{Cmd: exec.Command(bin, args...), stderr: &testutil.Buffer{}}
	p.Dir = dir
	p.Stderr = p.stderr
	p.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.Wait() }()
	t.Cleanup(func() {
		_ = p.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("toolhost serve: %v\n%s", err, p.stderr)
			}
		case <-time.After(2 * time.Minute):
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			<-exited
			t.Errorf("toolhost serve did not exit on SIGTERM\n%s", p.stderr)
		}
	})
	testutil.Eventually(t, 2*time.Minute, func() bool {
		m := servingRE.FindStringSubmatch(p.stderr.String())
		if m != nil {
			p.url = m[1]
		}
		return m != nil
	}, "toolhost serve never listened: ", p.stderr.String)
	return p
}

// TestReloadReadme runs the README's "Reloading the configuration"
// commands: its serve line as a real process (on a free port) that a
// SIGHUP makes reload, and its --url lines against a fake serve answering
// the REST API's shapes (the real one is TestRemoteAgainstServe's).
func TestReloadReadme(t *testing.T) {
	script := block(t, mdBlocks(t, filepath.Join(testutil.Root(), "README.md")), "Reloading the configuration", "sh", 0)
	f := newFakeServe(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/status":
			fakeJSON(w, 200, []host.BackendStatus{{Name: "fs", Kind: "plugin", State: host.StateReady}})
		case "/api/v1/reload":
			fakeJSON(w, 200, host.ApplyReport{Added: []string{"fs"}})
		case "/api/v1/servers/fs/restart":
			fakeJSON(w, 200, host.BackendStatus{Name: "fs", Kind: "plugin", State: host.StateReady, Restarts: 1})
		default:
			apiErr(w, 404, "not_found", r.URL.Path)
		}
	})
	t.Setenv("TOOLHOST_TOKEN", "")
	var remote, serve int
	for _, line := range strings.Split(script, "\n") {
		line, _, _ = strings.Cut(line, "#")
		args := strings.Fields(line)
		if len(args) == 0 || args[0] != "toolhost" {
			continue
		}
		if slices.Contains(args, "serve") {
			serve++
			if args[len(args)-1] != "&" {
				t.Fatalf("the README's serve line does not run it in the background: %q", line)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "toolhost.toml"), []byte("[servers.fx]\ncommand = \""+testutil.Fixture(t)+"\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			serveArgs := append([]string{"--log-level", "info"}, args[1:len(args)-1]...)
			for i, a := range serveArgs {
				serveArgs[i] = strings.ReplaceAll(a, "127.0.0.1:8808", "127.0.0.1:0")
			}
			p := startServeArgs(t, dir, serveArgs...)
			if err := p.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, 2*time.Minute, func() bool { return strings.Contains(p.stderr.String(), "configuration reloaded: trigger=SIGHUP") },
				"the README's serve did not reload on SIGHUP: ", p.stderr.String)
			continue
		}
		remote++
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "http://127.0.0.1:8808", f.URL)
		}
		if code, stdout, stderr := runCLI(args[1:]...); code != exitOK || !strings.Contains(stdout, "fs") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", line, code, stdout, stderr)
		}
	}
	if serve != 1 || remote != 3 {
		t.Errorf("the README's block has %d serve and %d --url lines; want 1 and 3:\n%s", serve, remote, script)
	}
}
