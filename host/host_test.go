package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/pgtest"
	"github.com/toolhost/toolhost/internal/procgroup"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
)

func TestMain(m *testing.M) {
	code := testutil.Main(m)
	pgtest.Stop() // the PostgreSQL of the store's tests, if one was started
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreCurrent()); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// newHost parses a TOML configuration (with @FIXTURE@ replaced by the fixture
// server's path) and starts a Host on it, closed when the test ends.
func newHost(t *testing.T, toml string) *host.Host {
	t.Helper()
	toml = strings.ReplaceAll(toml, "@FIXTURE@", testutil.Fixture(t))
	toml = strings.ReplaceAll(toml, "@EVERYTHING@", testutil.EverythingPackage)
	cfg, err := config.Parse([]byte(toml), &config.Options{Name: "test.toml", LookupEnv: func(k string) (string, bool) {
		if k == "SECRET_TOKEN" {
			return "tok-very-secret", true
		}
		return os.LookupEnv(k)
	}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(context.Background(), cfg, &host.Options{
		Logger:         hclog.New(&hclog.LoggerOptions{Name: "host", Output: testWriter{t}, Level: hclog.Info}),
		TerminateGrace: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	return resultString(res)
}

// waitState waits up to 5s for backend name to reach state and returns its
// status.
func waitState(t testing.TB, h *host.Host, name string, state host.State) host.BackendStatus {
	t.Helper()
	var st host.BackendStatus
	testutil.Eventually(t, 5*time.Second, func() bool { st = statusOf(h, name); return st.State == state },
		func() string {
			return fmt.Sprintf("%s: state %s (last error %q), want %s", name, st.State, st.LastError, state)
		})
	return st
}

// waitGone waits up to 10s until no process of the group pgid is left.
func waitGone(t testing.TB, pgid int) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() bool { return len(procgroup.Members(pgid)) == 0 },
		func() string { return fmt.Sprintf("process group %d still has %v", pgid, procgroup.Members(pgid)) })
}

func statusOf(h *host.Host, name string) host.BackendStatus {
	for _, s := range h.Status() {
		if s.Name == name {
			return s
		}
	}
	return host.BackendStatus{}
}

const brokenBackends = `
[servers.missing]
command = "toolhost-no-such-program"
max_restarts = 0

[servers.exits]
command = "@FIXTURE@"
args = ["-mode=exit-init"]
max_restarts = 0

[servers.garbage]
command = "@FIXTURE@"
args = ["-mode=garbage"]
strict_stdout = true
max_restarts = 0

[servers.deadhttp]
url = "http://127.0.0.1:1/mcp"
max_restarts = 0
`

// TestBrokenBackendsDoNotBreakOthers: backends that fail to start in four
// different ways show as failed with distinct errors, while the catalogue
// and calls of the working backends are unaffected.
func TestBrokenBackendsDoNotBreakOthers(t *testing.T) {
	h := newHost(t, `
[servers.fixture]
command = "@FIXTURE@"
env = { TOKEN = "${SECRET_TOKEN}" }
`+brokenBackends)
	ctx := context.Background()
	tools, err := h.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
		if tool.Backend != "fixture" {
			t.Errorf("tool %s from %s: only fixture is up", tool.Name, tool.Backend)
		}
	}
	if !strings.Contains(strings.Join(names, " "), "fixture__echo") {
		t.Fatalf("catalogue %v lacks fixture__echo", names)
	}
	for name, want := range map[string]error{
		"missing":  transport.ErrStart,
		"exits":    transport.ErrInitialize,
		"garbage":  transport.ErrProtocol,
		"deadhttp": transport.ErrStart,
	} {
		st := statusOf(h, name)
		if st.State != host.StateFailed || !errors.Is(st.Err, want) {
			t.Errorf("%s: status %+v, want failed with %v", name, st, want)
		}
	}
	if st := statusOf(h, "fixture"); st.State != host.StateReady || st.Tools != 6 || st.Pid == 0 {
		t.Errorf("fixture status %+v, want ready with 6 tools and a pid", st)
	}
	if s := statusOf(h, "exits").LastError; !strings.Contains(s, "status 3") {
		t.Errorf("exits: last error %q should give the exit status", s)
	}
	if s := statusOf(h, "garbage").LastError; !strings.Contains(s, "not a JSON-RPC message") {
		t.Errorf("garbage: last error %q should name the protocol violation", s)
	}
	res, err := h.CallTool(ctx, "fixture__echo", map[string]any{"text": "still serving"})
	if err != nil || text(t, res) != "still serving" {
		t.Fatalf("echo: %v %v", res, err)
	}
}

func TestCallErrors(t *testing.T) {
	h := newHost(t, `
[servers.fixture]
command = "@FIXTURE@"
env = { TOKEN = "${SECRET_TOKEN}" }

[servers.slow]
command = "@FIXTURE@"
timeout = "300ms"

[servers.crashy]
command = "@FIXTURE@"
max_restarts = 0
`)
	ctx := context.Background()

	t.Run("UnknownTool", func(t *testing.T) {
		_, err := h.CallTool(ctx, "fixture__ech", nil)
		var ute *host.UnknownToolError
		if !errors.Is(err, host.ErrUnknownTool) || !errors.As(err, &ute) {
			t.Fatalf("got %v, want ErrUnknownTool", err)
		}
		if strings.Contains(err.Error(), "tok-very-secret") {
			t.Fatalf("error leaks a secret: %v", err)
		}
		want := `unknown tool "fixture__ech"; did you mean fixture__echo, crashy__echo, slow__echo? Call a tool by its exact name`
		if err.Error() != want {
			t.Errorf("got  %s\nwant %s", err, want)
		}
		// The typos models make: '-' for '_', one '_' for "__".
		for name, want := range map[string]string{"fixture__Echo": "fixture__echo", "fixture_add": "fixture__add", "fixture__fial": "fixture__fail"} {
			_, err := h.CallTool(ctx, name, nil)
			if !errors.As(err, &ute) || len(ute.Similar) == 0 || ute.Similar[0] != want {
				t.Errorf("%s: got %v, want a suggestion of %s", name, err, want)
			}
		}
	})
	t.Run("ToolErrorResult", func(t *testing.T) {
		res, err := h.CallTool(ctx, "fixture__fail", map[string]any{"message": "nope"})
		if err != nil || !res.IsError || text(t, res) != "nope" {
			t.Fatalf("got %+v, %v; want an isError result", res, err)
		}
	})
	t.Run("InvalidArguments", func(t *testing.T) {
		for _, args := range []any{json.RawMessage(`[1,2]`), `"text"`, []byte(`{bad`)} {
			_, err := h.CallTool(ctx, "fixture__echo", args)
			if !errors.Is(err, host.ErrInvalidArguments) {
				t.Errorf("args %s: got %v, want ErrInvalidArguments", args, err)
			}
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		start := time.Now()
		_, err := h.CallTool(ctx, "slow__sleep", map[string]any{"ms": 10000})
		if !errors.Is(err, host.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want ErrTimeout", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("timed-out call took %v", d)
		}
		// The backend keeps serving after a timed-out call.
		if res, err := h.CallTool(ctx, "slow__echo", map[string]any{"text": "ok"}); err != nil || text(t, res) != "ok" {
			t.Fatalf("after timeout: %v %v", res, err)
		}
	})
	t.Run("CallerDeadlineWins", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err := h.CallTool(cctx, "fixture__sleep", map[string]any{"ms": 10000})
		if !errors.Is(err, host.ErrTimeout) {
			t.Fatalf("got %v, want ErrTimeout", err)
		}
	})
	t.Run("Crash", func(t *testing.T) {
		pid := statusOf(h, "crashy").Pid
		_, err := h.CallTool(ctx, "crashy__crash", nil)
		if !errors.Is(err, host.ErrConnectionLost) {
			t.Fatalf("got %v, want ErrConnectionLost", err)
		}
		st := waitState(t, h, "crashy", host.StateFailed)
		if !strings.Contains(st.LastError, "status 7") {
			t.Errorf("status after crash: %+v", st)
		}
		_, err = h.CallTool(ctx, "crashy__echo", map[string]any{"text": "x"})
		if !errors.Is(err, host.ErrBackendUnavailable) {
			t.Errorf("call to a crashed backend: %v, want ErrBackendUnavailable", err)
		}
		waitGone(t, pid)
		// Other backends are unaffected.
		if res, err := h.CallTool(ctx, "fixture__echo", map[string]any{"text": "alive"}); err != nil || text(t, res) != "alive" {
			t.Fatalf("other backend after crash: %v %v", res, err)
		}
	})
}

// TestCollision: tool names that collide never fail New (issue 14, item
// 4): the later backend's tool is left out, listed by Excluded with an
// error wrapping ErrNameCollision that names both sources, and the rest of
// both backends is served; a backend that starts later (lazy) never takes
// a name from the one that already serves it.
func TestCollision(t *testing.T) {
	h := newHost(t, `
[servers.one]
command = "@FIXTURE@"
prefix = ""
start = "lazy"

[servers.two]
command = "@FIXTURE@"
args = ["-extra"]
prefix = ""
`)
	ctx := context.Background()
	owner := func(name string) string {
		tools, err := h.Tools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools {
			if tl.Name == name {
				return tl.Backend
			}
		}
		return ""
	}
	// Tools starts the lazy one: both are up, and two (ready first)
	// keeps every name it held.
	if got := owner("echo"); got != "two" {
		t.Errorf("echo served by %q, want two (the incumbent)", got)
	}
	if got := owner("delete_all"); got != "two" {
		t.Errorf("two's own tool delete_all served by %q", got)
	}
	if res, err := h.CallTool(ctx, "echo", map[string]any{"text": "hi"}); err != nil || text(t, res) != "hi" {
		t.Fatalf("echo: %v %v", res, err)
	}
	var found bool
	for _, e := range h.Excluded() {
		if e.Backend == "one" && e.Tool == "echo" {
			found = true
			if !strings.Contains(e.Reason, host.ErrNameCollision.Error()) || !strings.Contains(e.Reason, `one's tool "echo"`) ||
				!strings.Contains(e.Reason, `two's tool "echo"`) {
				t.Errorf("reason %q does not name both sources", e.Reason)
			}
		}
	}
	if !found {
		t.Errorf("one's echo not in Excluded: %+v", h.Excluded())
	}
}

func TestPrefixAndPromptsAndResources(t *testing.T) {
	h := newHost(t, `
[servers.fx]
command = "@FIXTURE@"
prefix = "f_"
`)
	ctx := context.Background()
	if res, err := h.CallTool(ctx, "f_add", map[string]any{"a": 2, "b": 3}); err != nil {
		t.Fatal(err)
	} else if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"sum":5}` {
		t.Errorf("structured content %s", sc)
	}
	ps, err := h.Prompts(ctx)
	if err != nil || len(ps) != 1 || ps[0].Name != "f_greeting" {
		t.Fatalf("prompts %+v %v", ps, err)
	}
	pr, err := h.GetPrompt(ctx, "f_greeting", map[string]string{"name": "Ada"})
	if err != nil || !strings.Contains(pr.Messages[0].Content.(*mcp.TextContent).Text, "Hello, Ada!") {
		t.Fatalf("prompt %+v %v", pr, err)
	}
	rs, err := h.Resources(ctx)
	if err != nil || len(rs) != 1 || rs[0].URI != "fixture://readme" {
		t.Fatalf("resources %+v %v", rs, err)
	}
	rr, err := h.ReadResource(ctx, rs[0].Backend, rs[0].URI)
	if err != nil || rr.Contents[0].Text != "fixture readme" {
		t.Fatalf("read %+v %v", rr, err)
	}
}

// TestEverythingAndFixture runs the main job: the reference server from npm
// and our Go fixture in one catalogue, over stdio, plus server-everything
// over Streamable HTTP.
func TestEverythingAndFixture(t *testing.T) {
	testutil.NeedNpx(t)
	url := testutil.StartEverythingHTTP(t)
	h := newHost(t, `
[servers.everything]
command = "npx"
args = ["-y", "@EVERYTHING@", "stdio"]

[servers.remote]
url = "`+url+`"

[servers.fixture]
command = "@FIXTURE@"
`)
	ctx := context.Background()
	for _, st := range h.Status() {
		if st.State != host.StateReady {
			t.Fatalf("%s not ready: %+v", st.Name, st)
		}
	}
	res, err := h.CallTool(ctx, "everything__echo", map[string]any{"message": "via stdio"})
	if err != nil || text(t, res) != "Echo: via stdio" {
		t.Fatalf("everything__echo: %v %v", res, err)
	}
	res, err = h.CallTool(ctx, "remote__get-sum", map[string]any{"a": 19, "b": 23})
	if err != nil || !strings.Contains(text(t, res), "42") {
		t.Fatalf("remote__get-sum: %v %v", res, err)
	}
	// Concurrent calls across backends.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name, args := "fixture__echo", map[string]any{"text": fmt.Sprint(i)}
			if i%2 == 0 {
				name, args = "everything__echo", map[string]any{"message": fmt.Sprint(i)}
			}
			if _, err := h.CallTool(ctx, name, args); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// Close leaves no process of any backend's group.
	var pids []int
	for _, st := range h.Status() {
		if st.Pid > 0 {
			pids = append(pids, st.Pid)
		}
	}
	if err := h.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for _, pid := range pids {
		if left := procgroup.Members(pid); len(left) > 0 {
			t.Errorf("process group %d still has %v after Close", pid, left)
		}
	}
	if _, err := h.CallTool(ctx, "fixture__echo", nil); !errors.Is(err, host.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
	if err := h.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
