package transport_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/procgroup"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
	"github.com/toolhost/toolhost/transport/transporttest"
)

func TestMain(m *testing.M) {
	// The goroutines before any test ran (the runtime's, package inits');
	// any other still running once the tests are done is a leak.
	before := goleak.IgnoreCurrent()
	code := testutil.Main(m)
	if code == 0 {
		if err := goleak.Find(before); err != nil {
			println("goleak:", err.Error())
			code = 1
		}
	}
	os.Exit(code)
}

func fixtureStdio(t *testing.T, args ...string) *transport.Stdio {
	return transport.NewStdio(transport.Command{
		Path:       testutil.Fixture(t),
		Args:       args,
		InheritEnv: config.DefaultInheritEnv,
	}, &transport.StdioOptions{Logger: hclog.New(&hclog.LoggerOptions{Name: t.Name(), Output: testWriter{t}, Level: hclog.Debug}), TerminateGrace: 500 * time.Millisecond})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestConformanceStdioFixture(t *testing.T) {
	transporttest.Run(t, transporttest.Backend{
		New:      func(t *testing.T) transport.Transport { return fixtureStdio(t) },
		Echo:     "echo",
		Slow:     "sleep",
		SlowArgs: map[string]any{"ms": 10000},
	})
}

// fixtureHTTP serves the fixture server's tools over Streamable HTTP from an
// in-process go-sdk server on a loopback httptest server.
func fixtureHTTP(t *testing.T) (url string, restart func()) {
	var h atomic.Pointer[mcp.StreamableHTTPHandler]
	var servers []*mcp.Server // every one restart made: their sessions end with the test
	newHandler := func() *mcp.StreamableHTTPHandler {
		srv := mcp.NewServer(&mcp.Implementation{Name: "httpfixture", Version: "1"}, nil)
		servers = append(servers, srv)
		addEchoSleep(srv)
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	}
	h.Store(newHandler())
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Fixture-Token") != "s3cret" {
			http.Error(w, "missing token", http.StatusUnauthorized)
			return
		}
		h.Load().ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		// A session its client left without DELETE (a restart's 404, a
		// cut connection) lives in its server until closed.
		for _, srv := range servers {
			for ss := range srv.Sessions() {
				ss.Close()
			}
		}
	})
	// restart replaces the server: every existing session is unknown to the
	// new one, which answers 404 for it, as a restarted server does.
	return ts.URL, func() { h.Store(newHandler()) }
}

func TestConformanceHTTPFixture(t *testing.T) {
	transporttest.Run(t, transporttest.Backend{
		New: func(t *testing.T) transport.Transport {
			url, _ := fixtureHTTP(t)
			return transport.NewHTTP(url, &transport.HTTPOptions{Headers: map[string]string{"X-Fixture-Token": "s3cret"}})
		},
		Echo:     "echo",
		Slow:     "sleep",
		SlowArgs: map[string]any{"ms": 10000},
	})
}

func TestConformanceStdioEverything(t *testing.T) {
	testutil.NeedNpx(t)
	transporttest.Run(t, transporttest.Backend{
		New: func(t *testing.T) transport.Transport {
			return transport.NewStdio(transport.Command{
				Path: "npx", Args: append(append([]string{}, testutil.EverythingArgs...), "stdio"),
				InheritEnv: config.DefaultInheritEnv,
			}, nil)
		},
		Echo:     "echo",
		EchoArg:  "message",
		Slow:     "trigger-long-running-operation",
		SlowArgs: map[string]any{"duration": 5, "steps": 5},
	})
}

func TestConformanceHTTPEverything(t *testing.T) {
	url := testutil.StartEverythingHTTP(t)
	transporttest.Run(t, transporttest.Backend{
		New:      func(t *testing.T) transport.Transport { return transport.NewHTTP(url, nil) },
		Echo:     "echo",
		EchoArg:  "message",
		Slow:     "trigger-long-running-operation",
		SlowArgs: map[string]any{"duration": 5, "steps": 5},
	})
}

func TestHTTPHeadersRequired(t *testing.T) {
	url, _ := fixtureHTTP(t)
	tr := transport.NewHTTP(url, nil) // no token header
	defer tr.Close()
	_, err := tr.Connect(context.Background())
	if !errors.Is(err, transport.ErrInitialize) || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("Connect without the header: %v, want ErrInitialize mentioning Unauthorized", err)
	}
}

func TestHTTPSessionLost(t *testing.T) {
	url, restart := fixtureHTTP(t)
	tr := transport.NewHTTP(url, &transport.HTTPOptions{Headers: map[string]string{"X-Fixture-Token": "s3cret"}})
	defer tr.Close()
	ctx := context.Background()
	if _, err := tr.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	call := func() error {
		res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		if err == nil && res.IsError {
			err = errors.New("tool error")
		}
		return err
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	restart()
	// Several callers hit the lost session at once: one re-initializes, all
	// succeed.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := call(); err != nil {
				t.Errorf("call after the server lost the session: %v", err)
			}
		}()
	}
	wg.Wait()
	if n := tr.Sessions(); n != 2 {
		t.Errorf("sessions opened = %d, want 2 (one re-initialization)", n)
	}
}

func TestHTTPUnreachable(t *testing.T) {
	port := testutil.FreePort(t)
	tr := transport.NewHTTP("http://127.0.0.1:"+strconv.Itoa(port)+"/mcp", nil)
	defer tr.Close()
	_, err := tr.Connect(context.Background())
	if !errors.Is(err, transport.ErrStart) {
		t.Fatalf("Connect to a closed port: %v, want ErrStart", err)
	}
}

func TestStdioFaults(t *testing.T) {
	ctx := context.Background()
	t.Run("CommandNotFound", func(t *testing.T) {
		tr := transport.NewStdio(transport.Command{Path: "toolhost-no-such-command"}, nil)
		defer tr.Close()
		_, err := tr.Connect(ctx)
		if !errors.Is(err, transport.ErrStart) || !strings.Contains(err.Error(), "toolhost-no-such-command") {
			t.Fatalf("got %v, want ErrStart naming the command", err)
		}
	})
	t.Run("ExitDuringInitialize", func(t *testing.T) {
		tr := fixtureStdio(t, "-mode=exit-init")
		defer tr.Close()
		_, err := tr.Connect(ctx)
		if !errors.Is(err, transport.ErrInitialize) || !strings.Contains(err.Error(), "status 3") ||
			!strings.Contains(err.Error(), "exiting during initialize") {
			t.Fatalf("got %v, want ErrInitialize with the exit status and stderr", err)
		}
	})
	t.Run("Garbage", func(t *testing.T) {
		tr := transport.NewStdio(transport.Command{Path: testutil.Fixture(t), Args: []string{"-mode=garbage"}},
			&transport.StdioOptions{TerminateGrace: 500 * time.Millisecond, StrictStdout: true})
		defer tr.Close()
		_, err := tr.Connect(ctx)
		if !errors.Is(err, transport.ErrInitialize) || !errors.Is(err, transport.ErrProtocol) ||
			!strings.Contains(err.Error(), "Server ready!") {
			t.Fatalf("got %v, want ErrInitialize+ErrProtocol quoting the line", err)
		}
	})
	t.Run("Banner", func(t *testing.T) {
		// Without StrictStdout a banner line is skipped, logged and counted.
		var logs strings.Builder
		var mu sync.Mutex
		tr := transport.NewStdio(transport.Command{Path: testutil.Fixture(t), Args: []string{"-mode=garbage"}},
			&transport.StdioOptions{TerminateGrace: 500 * time.Millisecond,
				Logger: hclog.New(&hclog.LoggerOptions{Output: lockedWriter{&mu, &logs}, Level: hclog.Warn})})
		defer tr.Close()
		if _, err := tr.Connect(ctx); err != nil {
			t.Fatalf("server with a banner: %v", err)
		}
		if _, err := tr.ListTools(ctx); err != nil {
			t.Fatal(err)
		}
		if n := tr.SkippedLines(); n != 1 {
			t.Errorf("SkippedLines = %d, want 1", n)
		}
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(logs.String(), `Server ready! (this banner is not JSON-RPC)`) {
			t.Errorf("the skipped line is not logged: %q", logs.String())
		}
	})
	t.Run("NeverAnswers", func(t *testing.T) {
		tr := fixtureStdio(t, "-mode=hang")
		defer tr.Close()
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		_, err := tr.Connect(cctx)
		if !errors.Is(err, transport.ErrInitialize) || !errors.Is(err, transport.ErrTimeout) {
			t.Fatalf("got %v, want ErrInitialize+ErrTimeout", err)
		}
	})
	t.Run("CrashMidCall", func(t *testing.T) {
		tr := fixtureStdio(t)
		defer tr.Close()
		if _, err := tr.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		_, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}})
		if !errors.Is(err, transport.ErrConnectionLost) || !strings.Contains(err.Error(), "status 7") {
			t.Fatalf("got %v, want ErrConnectionLost with exit status 7", err)
		}
		_, err = tr.ListTools(ctx)
		if !errors.Is(err, transport.ErrConnectionLost) {
			t.Fatalf("after the crash: %v, want ErrConnectionLost", err)
		}
	})
}

func TestStdioEnvironment(t *testing.T) {
	testutil.NeedNpx(t)
	t.Setenv("TOOLHOST_TEST_SECRET", "leak-me-not")
	tr := transport.NewStdio(transport.Command{
		Path: "npx", Args: append(append([]string{}, testutil.EverythingArgs...), "stdio"),
		InheritEnv: config.DefaultInheritEnv,
		Env:        map[string]string{"GIVEN": "given-value"},
	}, nil)
	defer tr.Close()
	ctx := context.Background()
	if _, err := tr.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: "get-env", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if strings.Contains(text, "leak-me-not") {
		t.Errorf("child saw a variable outside inherit_env: %s", text)
	}
	if !strings.Contains(text, "given-value") || !strings.Contains(text, "PATH") {
		t.Errorf("child environment lacks env or inherited PATH: %.300s", text)
	}
}

// TestStdioCloseLeavesNothing checks the shutdown escalation on the whole
// process group: a grandchild, a server that ignores SIGTERM, and npx.
func TestStdioCloseLeavesNothing(t *testing.T) {
	ctx := context.Background()
	cases := map[string]func(t *testing.T) *transport.Stdio{
		"spawn":       func(t *testing.T) *transport.Stdio { return fixtureStdio(t, "-mode=spawn") },
		"ignore-term": func(t *testing.T) *transport.Stdio { return fixtureStdio(t, "-mode=ignore-term") },
		"npx": func(t *testing.T) *transport.Stdio {
			testutil.NeedNpx(t)
			return transport.NewStdio(transport.Command{
				Path: "npx", Args: append(append([]string{}, testutil.EverythingArgs...), "stdio"),
				InheritEnv: config.DefaultInheritEnv,
			}, nil)
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			tr := mk(t)
			if _, err := tr.Connect(ctx); err != nil {
				t.Fatal(err)
			}
			pgid := tr.Pid()
			if pgid == 0 {
				t.Fatal("no pid after Connect")
			}
			// No wait for a spawned grandchild: Connect's answer is the signal
			// (mcpfixture -mode=spawn starts it before it serves; npx's
			// children are up once the server answers).
			members := procgroup.Members(pgid)
			if err := tr.Close(); err != nil && name != "ignore-term" {
				t.Errorf("Close: %v", err)
			}
			if left := procgroup.Members(pgid); len(left) > 0 {
				t.Errorf("after Close, process group %d still has %v (had %v)", pgid, left, members)
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			if name == "spawn" && len(members) < 2 {
				t.Errorf("expected the grandchild in the group, saw %v", members)
			}
		})
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// addEchoSleep adds the HTTP test servers' two plain tools to srv: "echo"
// {text} answers its text, "sleep" {ms} answers "done" after ms
// milliseconds or when its call is cancelled.
func addEchoSleep(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "sleep"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
		Ms int `json:"ms"`
	}) (*mcp.CallToolResult, any, error) {
		select {
		case <-time.After(time.Duration(in.Ms) * time.Millisecond):
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
}
