package gateway_test

import (
	"context"
	"fmt"
	"net/http"
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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testutil"
)

// The reload tests run `toolhost serve --listen 127.0.0.1:0` as a real
// child process on a configuration file with fixture backends, connect
// go-sdk clients to it over Streamable HTTP, change the file and make serve
// reload it (SIGHUP, --watch).

// reloadBefore: keep stays, gone goes, chg changes (its args); no
// resource is served (every fixture has the one fixture://readme, so only
// the policy can change the resources a client sees).
const reloadBefore = `
[policy]
deny_resources = ["*:fixture://**"]
[servers.keep]
command = "@FIXTURE@"
env     = { RELOAD_BACKEND = "keep" }
args    = ["-faults"]
startup_timeout = "5m"

[servers.gone]
command = "@FIXTURE@"
env     = { RELOAD_BACKEND = "gone" }
args    = ["-faults"]
startup_timeout = "5m"

[servers.chg]
command = "@FIXTURE@"
env     = { RELOAD_BACKEND = "chg" }
args    = ["-faults"]
startup_timeout = "5m"

[serve]
max_sessions = 200
max_concurrent = 200
max_connections_per_peer = 1000
`

// reloadAfter: gone removed, chg with -extra (new tools), new added,
// resources allowed.
const reloadAfter = `
[servers.keep]
command = "@FIXTURE@"
env     = { RELOAD_BACKEND = "keep" }
args    = ["-faults"]
startup_timeout = "5m"

[servers.chg]
command = "@FIXTURE@"
env     = { RELOAD_BACKEND = "chg" }
args    = ["-faults", "-extra"]
startup_timeout = "5m"

[servers.new]
command = "@FIXTURE@"
env     = { RELOAD_BACKEND = "new" }
startup_timeout = "5m"

[serve]
max_sessions = 200
max_concurrent = 200
max_connections_per_peer = 1000
`

// reloadInvalid has two problems, on lines 6 and 10.
const reloadInvalid = `
[servers.keep]
command = "@FIXTURE@"
env     = { RELOAD_BACKEND = "keep" }
args    = ["-faults"]
bogus   = 1

[servers.other]
command = "@FIXTURE@"
startup_timeout = "soon"
`

// serveProc is a running `toolhost serve` child process.
type serveProc struct {
	cmd    *exec.Cmd
	cfg    string // the configuration file's path
	url    string // its MCP endpoint
	stderr *testutil.Buffer
	hc     *http.Client
	done   chan struct{} // closed when the process has exited
}

// writeConfig writes src (with @FIXTURE@ replaced) to path, atomically:
// a new file renamed over the old, as editors save.
func writeConfig(t *testing.T, path, src string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.ReplaceAll(src, "@FIXTURE@", testutil.Fixture(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

var servingRE = regexp.MustCompile(`serving MCP \(Streamable HTTP\) at (http://\S+/mcp)`)

// startServe runs toolhost serve on src with args added, and waits until
// it listens. It is stopped (SIGTERM, and it must exit 0) when the test
// ends.
func startServe(t *testing.T, src string, args ...string) *serveProc {
	t.Helper()
	return startServeWith(t, src, nil, args...)
}

// startServeWith is startServe that runs early (when not nil) once the
// process has started, before it listens.
func startServeWith(t *testing.T, src string, early func(p *serveProc), args ...string) *serveProc {
	t.Helper()
	bin := testutil.GoBinary(t, "./cmd/toolhost")
	p := &serveProc{cfg: filepath.Join(t.TempDir(), "toolhost.toml"), stderr: &testutil.Buffer{}}
	writeConfig(t, p.cfg, src)
	p.cmd = exec.Command(bin, append([]string{"--config", p.cfg, "--log-level", "info", "serve", "--listen", "127.0.0.1:0"}, args...)...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	p.done = make(chan struct{})
	go func() {
		err := p.cmd.Wait()
		close(p.done)
		exited <- err
	}()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	p.hc = &http.Client{Transport: tr}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("toolhost serve exited with %v\nstderr:\n%s", err, p.stderr)
			}
		case <-time.After(waitTimeout):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			t.Errorf("toolhost serve did not exit on SIGTERM\nstderr:\n%s", p.stderr)
		}
		if t.Failed() {
			t.Logf("toolhost serve stderr:\n%s", p.stderr)
		}
	})
	if early != nil {
		early(p)
	}
	testutil.Eventually(t, waitTimeout, func() bool {
		m := servingRE.FindStringSubmatch(p.stderr.String())
		if m != nil {
			p.url = m[1]
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("toolhost serve exited: %v\nstderr:\n%s", err, p.stderr)
		default:
		}
		return m != nil
	}, "toolhost serve never listened: ", p.stderr.String)
	return p
}

// listChanges counts a client's list_changed notifications.
type listChanges struct {
	tools, prompts, resources chan struct{}
}

// connect opens a go-sdk client session with p; it is closed when the test
// ends.
func (p *serveProc) connect(t *testing.T, lc *listChanges) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if lc != nil {
		signal := func(c chan struct{}) {
			select {
			case c <- struct{}{}:
			default:
			}
		}
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { signal(lc.tools) }
		opts.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) { signal(lc.prompts) }
		opts.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) { signal(lc.resources) }
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "reload-client"}, opts).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.url, HTTPClient: p.hc}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func newListChanges() *listChanges {
	return &listChanges{tools: make(chan struct{}, 1), prompts: make(chan struct{}, 1), resources: make(chan struct{}, 1)}
}

// wait waits for one notification on c; it fails at once if serve
// exits.
func (p *serveProc) wait(t *testing.T, c chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-p.done:
		t.Fatalf("toolhost serve exited while the test waited for %s", what)
	case <-time.After(waitTimeout):
		t.Fatalf("no %s within %v", what, waitTimeout)
	}
}

// pids lists the processes of backend (by the RELOAD_BACKEND variable
// of its environment) among serve's descendants. (Not the fixture's own
// getpid: a stdio server runs in a PID namespace of its own, where it is
// pid 1.)
func (p *serveProc) pids(backend string) []int {
	var out []int
	for _, pid := range testutil.Descendants(p.cmd.Process.Pid) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if strings.Contains(string(cmdline), "mcpfixture") && strings.Contains("\x00"+string(environ), "\x00RELOAD_BACKEND="+backend+"\x00") {
			out = append(out, pid)
		}
	}
	return out
}

// pidOf waits until backend has one process other than not, and returns
// its pid.
func (p *serveProc) pidOf(t *testing.T, backend string, not int) int {
	t.Helper()
	var got []int
	testutil.Eventually(t, waitTimeout, func() bool {
		got = p.pids(backend)
		return len(got) == 1 && got[0] != not
	}, func() string { return fmt.Sprintf("%s's processes: %v (want one, not %d)", backend, got, not) })
	return got[0]
}

func (p *serveProc) hup(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
}

// waitLog waits until serve's stderr holds n occurrences of s.
func (p *serveProc) waitLog(t *testing.T, s string, n int) {
	t.Helper()
	testutil.Eventually(t, waitTimeout, func() bool {
		select {
		case <-p.done:
			t.Fatalf("toolhost serve exited while the test waited for %q in its log", s)
		default:
		}
		return strings.Count(p.stderr.String(), s) >= n
	},
		fmt.Sprintf("serve's stderr never held %d× %q:\n", n, s), p.stderr.String)
}

// TestReloadSIGHUP: SIGHUP makes serve apply the edited file: the removed
// backend's process goes, the changed one is restarted (new pid, new
// tools), the added one starts, the unchanged one keeps its process; the
// client's session survives and is told that tools, prompts and resources
// changed. An invalid file then changes nothing and serve logs every
// problem with its line; a valid file after it applies again.
func TestReloadSIGHUP(t *testing.T) {
	p := startServe(t, reloadBefore)
	lc := newListChanges()
	cs := p.connect(t, lc)
	keepPid, chgPid, gonePid := p.pidOf(t, "keep", 0), p.pidOf(t, "chg", 0), p.pidOf(t, "gone", 0)
	if names := toolNames(t, cs); !slices.Contains(names, "gone__echo") || slices.Contains(names, "chg__nested") {
		t.Fatalf("tools before = %v", names)
	}

	writeConfig(t, p.cfg, reloadAfter)
	p.hup(t)
	p.wait(t, lc.tools, "notifications/tools/list_changed")
	p.wait(t, lc.prompts, "notifications/prompts/list_changed")
	p.wait(t, lc.resources, "notifications/resources/list_changed")
	p.waitLog(t, "configuration reloaded", 1)
	log := p.stderr.String()
	if !strings.Contains(log, "trigger=SIGHUP") || !strings.Contains(log, `added=["new"]`) || !strings.Contains(log, `removed=["gone"]`) || !strings.Contains(log, `changed=["chg"]`) {
		t.Errorf("the reload's log line lacks what it did:\n%s", log)
	}
	names := toolNames(t, cs)
	for _, want := range []string{"keep__echo", "chg__nested", "new__echo"} {
		if !slices.Contains(names, want) {
			t.Errorf("after reload, tools lack %s: %v", want, names)
		}
	}
	if slices.Contains(names, "gone__echo") {
		t.Errorf("after reload, the removed backend's tools are still listed: %v", names)
	}
	if got := p.pids("keep"); !slices.Equal(got, []int{keepPid}) {
		t.Errorf("the unchanged backend was restarted: pids %v, was %d", got, keepPid)
	}
	p.pidOf(t, "chg", chgPid)
	testutil.WaitGone(t, []int{gonePid, chgPid}, waitTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "new__echo", Arguments: map[string]any{"text": "hi"}}); err != nil || text(res) != "hi" {
		t.Errorf("new__echo on the same session: %v %v", res, err)
	}

	// An invalid file: nothing changes, every problem is logged with its
	// position.
	writeConfig(t, p.cfg, reloadInvalid)
	p.hup(t)
	p.waitLog(t, "reload refused: the configuration is invalid; nothing was changed", 1)
	p.waitLog(t, "configuration problem", 2)
	log = p.stderr.String()
	for _, want := range []string{"line=6 key=servers.keep.bogus", "line=10 key=servers.other.startup_timeout"} {
		if !strings.Contains(log, want) {
			t.Errorf("serve's log lacks the problem %q:\n%s", want, log)
		}
	}
	if got := toolNames(t, cs); !slices.Equal(got, names) {
		t.Errorf("an invalid reload changed the tools: %v, was %v", got, names)
	}
	if got := p.pids("keep"); !slices.Equal(got, []int{keepPid}) {
		t.Errorf("an invalid reload restarted keep: pids %v, was %d", got, keepPid)
	}

	// Back to the first file: it applies.
	writeConfig(t, p.cfg, reloadBefore)
	p.hup(t)
	p.waitLog(t, "configuration reloaded", 2)
	testutil.Eventually(t, waitTimeout, func() bool { return slices.Contains(toolNames(t, cs), "gone__echo") }, "gone never came back")
	if got := p.pids("keep"); !slices.Equal(got, []int{keepPid}) {
		t.Errorf("keep was restarted by the third reload: pids %v, was %d", got, keepPid)
	}
}

// TestReloadSIGHUPDuringStart: a SIGHUP that arrives while serve's
// backends are still starting (one takes 2s) does not kill serve (SIGHUP's
// default action): serve comes up, and then reloads.
func TestReloadSIGHUPDuringStart(t *testing.T) {
	src := strings.Replace(reloadBefore, `args    = ["-faults"]`, `args    = ["-faults", "-start-delay", "2s"]`, 1)
	p := startServeWith(t, src, func(p *serveProc) {
		// The backends are starting: the host has spawned them.
		p.waitLog(t, "started: pid=", 1)
		p.hup(t)
	}, "--log-level", "debug")
	p.waitLog(t, "configuration reloaded: trigger=SIGHUP", 1)
	cs := p.connect(t, nil)
	if names := toolNames(t, cs); !slices.Contains(names, "keep__echo") {
		t.Errorf("tools = %v", names)
	}
}

// TestReloadWatch: with --watch, serve reloads when the file is replaced
// (written to a temporary file and renamed over it, as editors save),
// keeps the configuration in force while the file is gone, and reloads
// when it is created again.
func TestReloadWatch(t *testing.T) {
	p := startServe(t, reloadBefore, "--watch")
	lc := newListChanges()
	cs := p.connect(t, lc)
	keepPid := p.pidOf(t, "keep", 0)

	writeConfig(t, p.cfg, reloadAfter)
	p.wait(t, lc.tools, "notifications/tools/list_changed after the file was replaced")
	p.waitLog(t, "configuration reloaded", 1)
	if !strings.Contains(p.stderr.String(), "trigger=--watch") {
		t.Errorf("the reload's log line does not say --watch")
	}
	if names := toolNames(t, cs); !slices.Contains(names, "new__echo") || slices.Contains(names, "gone__echo") {
		t.Errorf("after the file was replaced: tools %v", names)
	}

	if err := os.Remove(p.cfg); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "the configuration file is gone", 1)
	if names := toolNames(t, cs); !slices.Contains(names, "new__echo") {
		t.Errorf("removing the file changed the tools: %v", names)
	}

	// Created again (not by rename), with gone back.
	if err := os.WriteFile(p.cfg, []byte(strings.ReplaceAll(reloadBefore, "@FIXTURE@", testutil.Fixture(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	p.wait(t, lc.tools, "notifications/tools/list_changed after the file was created again")
	p.waitLog(t, "configuration reloaded", 2)
	if names := toolNames(t, cs); !slices.Contains(names, "gone__echo") || slices.Contains(names, "new__echo") {
		t.Errorf("after the file came back: tools %v", names)
	}
	if got := p.pids("keep"); !slices.Equal(got, []int{keepPid}) {
		t.Errorf("keep was restarted: pids %v, was %d", got, keepPid)
	}
}

// TestReloadUnderLoad: 50 clients, each with its own session, call tools
// in a loop while serve reloads. No call to the unchanged backend fails;
// calls to the removed backend either succeed (before it goes) or fail
// with an error that says so (backend removed, or an unknown tool once the
// catalogue no longer lists it); calls to the changed backend fail only
// when they were in flight to its old process (backend removed: replaced
// by its new configuration).
func TestReloadUnderLoad(t *testing.T) {
	p := startServe(t, reloadBefore)
	const clients = 50
	sessions := make([]*mcp.ClientSession, clients)
	for i := range sessions {
		sessions[i] = p.connect(t, nil)
	}
	target := func(i int) string {
		switch i % 5 {
		case 0:
			return "gone"
		case 1:
			return "chg"
		}
		return "keep"
	}
	type tally struct{ ok, removed, other int }
	var (
		mu     sync.Mutex
		counts = map[string]*tally{"keep": {}, "gone": {}, "chg": {}}
		others []string
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for i, cs := range sessions {
		wg.Go(func() {
			b := target(i)
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: b + "__echo", Arguments: map[string]any{"text": fmt.Sprint(i, "-", n)}})
				msg := ""
				switch {
				case err != nil:
					msg = err.Error()
				case res.IsError || text(res) != fmt.Sprint(i, "-", n):
					msg = "result: " + text(res)
				}
				mu.Lock()
				c := counts[b]
				switch {
				case msg == "":
					c.ok++
				case b != "keep" && (strings.Contains(msg, "backend removed") || (b == "gone" && strings.Contains(msg, "unknown tool"))):
					c.removed++
				default:
					c.other++
					others = append(others, b+": "+msg)
				}
				mu.Unlock()
			}
		})
	}
	// Let every client make calls, then reload under them.
	testutil.Eventually(t, waitTimeout, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return counts["keep"].ok >= 3*clients && counts["gone"].ok > 0 && counts["chg"].ok > 0
	}, "the clients made no calls")
	writeConfig(t, p.cfg, reloadAfter)
	p.hup(t)
	p.waitLog(t, "configuration reloaded", 1)
	mu.Lock()
	atReload := counts["keep"].ok
	mu.Unlock()
	testutil.Eventually(t, waitTimeout, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return counts["keep"].ok >= atReload+3*clients && counts["gone"].removed > 0
	}, "calls did not go on after the reload")
	close(stop)
	wg.Wait()
	t.Logf("calls: keep %+v, gone %+v, chg %+v", *counts["keep"], *counts["gone"], *counts["chg"])
	if len(others) > 0 {
		t.Errorf("%d calls failed for another reason than a removed backend; first: %s", len(others), others[0])
	}
	if counts["keep"].removed != 0 {
		t.Errorf("calls to the unchanged backend failed: %+v", *counts["keep"])
	}
	// The sessions are all alive.
	for i, cs := range sessions {
		if err := cs.Ping(ctx, nil); err != nil {
			t.Errorf("session %d: %v", i, err)
		}
	}
}
