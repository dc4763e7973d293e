package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/gateway"
	"github.com/toolhost/toolhost/internal/testutil"
)

func TestMain(m *testing.M) {
	// The goroutines before any test ran (the runtime's, package inits');
	// any other still running once the tests are done is a leak.
	before := goleak.IgnoreCurrent()
	code := testutil.Main(m)
	if code == 0 {
		// lumberjack v2.2.1 keeps one goroutine per log file for the
		// process (internal/serverlog shares them; see RATIONALE).
		if err := goleak.Find(before, goleak.IgnoreTopFunction("gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// waitTimeout bounds every wait for an event: generous, because the
// machine may be busy and -race is slow; a passing test never waits it out.
const waitTimeout = 2 * time.Minute

const testConfig = `
[servers.fx]
command = "@FIXTURE@"
args    = ["-faults", "-progress"]
startup_timeout = "5m"

[policy]
deny = ["fx__crash", "fx__freeze", "fx__hang"]

[profiles.review]
allow     = ["fx__echo", "fx__add"]
prompts   = ["none__*"]
resources = ["fx:fixture://**"]

[serve.clients.alice]
token   = "alice-token-0123456789"
profile = "review"

[serve.clients.bob]
token = "bob-token-0123456789ab"
`

type fixture struct {
	m     *gateway.Metrics
	h     *host.Host
	g     *gateway.Gateway
	cfg   *config.Config
	mu    sync.Mutex
	audit []host.AuditRecord
}

func (f *fixture) records() []host.AuditRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.audit)
}

func start(t *testing.T, src string) *fixture {
	t.Helper()
	return startTB(t, src)
}

// startFuzz starts the fixture for a fuzz target (closed when it ends).
func startFuzz(f *testing.F) *fixture { return startTB(f, testConfig) }

func startTB(t testing.TB, src string) *fixture {
	t.Helper()
	cfg, err := config.Parse([]byte(strings.ReplaceAll(src, "@FIXTURE@", testutil.Fixture(t))), &config.Options{Name: "test.toml"})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{cfg: cfg, m: gateway.NewMetrics()}
	logger := hclog.New(&hclog.LoggerOptions{Name: "gw", Output: io.Discard})
	f.h, err = host.New(context.Background(), cfg, &host.Options{Logger: logger, Elicit: gateway.Elicit, Sample: gateway.Sample, ListRoots: gateway.Roots, Audit: func(r host.AuditRecord) {
		f.mu.Lock()
		f.audit = append(f.audit, r)
		f.mu.Unlock()
		f.m.Record(r)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.h.Close() })
	f.g, err = gateway.New(f.h, &gateway.Options{Logger: logger, Version: "test", Metrics: f.m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.g.Close() })
	return f
}

// serveLoopback serves f's gateway over HTTP on a loopback listener until
// the test ends, and returns its MCP endpoint URL.
func serveLoopback(t *testing.T, f *fixture) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.g.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// memSession connects client to f's gateway over an in-memory transport
// (what ServeStdio runs on stdin and stdout); the session ends with the
// test.
func memSession(t *testing.T, f *fixture, client *mcp.Client, opts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	return sessionOn(t, f, client, opts, ct, st)
}

// sessionOn serves f's gateway on st and connects client to it on ct; the
// session and the serving end with the test.
func sessionOn(t *testing.T, f *fixture, client *mcp.Client, opts *mcp.ClientSessionOptions, ct, st mcp.Transport) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.g.ServeTransport(ctx, st) }()
	cs, err := client.Connect(ctx, ct, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-served
	})
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestStdioSession: over one in-memory session (what ServeStdio runs on
// stdin/stdout), the client sees the policed catalogue, calls go through
// the host with their audit record naming the client, and a tool added by
// the backend reaches the client with notifications/tools/list_changed.
func TestStdioSession(t *testing.T) {
	f := start(t, testConfig)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs := memSession(t, f, client, nil)

	names := toolNames(t, cs)
	if !slices.Contains(names, "fx__echo") || slices.Contains(names, "fx__crash") {
		t.Fatalf("tools = %v; want fx__echo and not the denied fx__crash", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "through the gateway"}})
	if err != nil || res.IsError || text(res) != "through the gateway" {
		t.Fatalf("call = %+v, %v", res, err)
	}
	// A denied tool is not there at all: a protocol error, not a result.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__crash"}); err == nil {
		t.Error("calling a denied tool succeeded")
	}
	// Invalid arguments are the host's tool error.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__add", Arguments: map[string]any{"a": "x"}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "invalid arguments for fx__add") {
		t.Errorf("invalid call = %+v, %v", res, err)
	}
	recs := f.records()
	if len(recs) == 0 || recs[0].Tool != "fx__echo" || recs[0].Client != gateway.ClientStdio || recs[0].Outcome != host.OutcomeOK {
		t.Errorf("first audit record %+v; want fx__echo by client stdio, ok", recs)
	}

	// Prompts and resources.
	ps, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(ps.Prompts) != 1 || ps.Prompts[0].Name != "fx__greeting" {
		t.Fatalf("prompts = %+v, %v", ps, err)
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "fx__greeting", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || !strings.Contains(pr.Messages[0].Content.(*mcp.TextContent).Text, "Hello, Ada!") {
		t.Fatalf("prompt = %+v, %v", pr, err)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://readme"})
	if err != nil || rr.Contents[0].Text != "fixture readme" {
		t.Fatalf("read = %+v, %v", rr, err)
	}

	// The backend adds a tool: the host's catalogue event reaches the
	// client as list_changed, and the tool is callable.
	for len(changed) > 0 {
		<-changed
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__add_tool", Arguments: map[string]any{"name": "late"}}); err != nil || res.IsError {
		t.Fatalf("add_tool = %+v, %v", res, err)
	}
	for !slices.Contains(toolNames(t, cs), "fx__late") {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("no list_changed with fx__late; tools %v", toolNames(t, cs))
		}
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__late", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Errorf("late tool = %+v, %v", res, err)
	}
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

func connectHTTP(ctx context.Context, url, tok string) (*mcp.ClientSession, error) {
	hc := &http.Client{Transport: bearer{tok, http.DefaultTransport}}
	if tok == "" {
		hc = http.DefaultClient
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "http-client"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
}

// TestHTTPTokensAndProfiles: over Streamable HTTP each token gets its
// client's profile, and nothing of another; no token and a wrong token
// are 401 before any MCP handling; /healthz and /readyz answer without a
// token.
func TestHTTPTokensAndProfiles(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			src := testConfig
			if stateless {
				src += "\n[serve]\nstateless = true\n"
				// ([serve] must come before [serve.clients] in TOML
				// only by convention; a later [serve] table is fine.)
			}
			f := start(t, src)
			srv := httptest.NewServer(f.g.Handler())
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()

			alice, err := connectHTTP(ctx, srv.URL+"/mcp", "alice-token-0123456789")
			if err != nil {
				t.Fatal(err)
			}
			defer alice.Close()
			if got := toolNames(t, alice); !slices.Equal(got, []string{"fx__add", "fx__echo"}) {
				t.Errorf("alice (review) tools = %v", got)
			}
			if ps, err := alice.ListPrompts(ctx, nil); err != nil || len(ps.Prompts) != 0 {
				t.Errorf("alice prompts = %+v, %v; want none", ps, err)
			}
			res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || text(res) != "hi" {
				t.Fatalf("alice call = %+v, %v", res, err)
			}
			bob, err := connectHTTP(ctx, srv.URL+"/mcp", "bob-token-0123456789ab")
			if err != nil {
				t.Fatal(err)
			}
			defer bob.Close()
			if got := toolNames(t, bob); !slices.Contains(got, "fx__stats") || slices.Contains(got, "fx__crash") {
				t.Errorf("bob (global policy) tools = %v", got)
			}
			if _, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "fx__stats", Arguments: map[string]any{}}); err != nil {
				t.Fatal(err)
			}
			byClient := map[string]string{}
			for _, r := range f.records() {
				byClient[r.Client] = r.Tool
				if r.Profile == "review" && r.Client != "alice" {
					t.Errorf("record %+v: profile review but client %q", r, r.Client)
				}
			}
			if byClient["alice"] != "fx__echo" || byClient["bob"] != "fx__stats" {
				t.Errorf("audit by client = %v", byClient)
			}

			for _, tok := range []string{"", "wrong-token-0123456789"} {
				req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if tok != "" {
					req.Header.Set("Authorization", "Bearer "+tok)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("token %q: status %d, want 401", tok, resp.StatusCode)
				}
			}
			resp, err := http.Get(srv.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			metrics, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, want := range []string{
				`mcp_invocations_total{backend="fx",outcome="ok",profile="review",tool="fx__echo"} 1`,
				`mcp_invocations_total{backend="fx",outcome="ok",profile="",tool="fx__stats"} 1`,
				`mcp_backend_state{backend="fx",state="ready"} 1`,
				`mcp_invocation_latency_ms_count{backend="fx",profile="review",tool="fx__echo"} 1`,
				"mcp_rate_limited_total 0", "mcp_rate_store_fallbacks_total 0", "mcp_rate_store_down 0",
			} {
				if !strings.Contains(string(metrics), want) {
					t.Errorf("/metrics lacks %s", want)
				}
			}
			for path, want := range map[string]int{"/healthz": 200, "/readyz": 200} {
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("%s: %d, want %d", path, resp.StatusCode, want)
				}
			}
		})
	}
}

// TestHTTPLimits: an oversized body is 413; a listener beyond loopback
// without tokens is refused.
func TestHTTPLimits(t *testing.T) {
	f := start(t, strings.Replace(testConfig, "[serve.clients.alice]", "[serve]\nmax_body = \"1KiB\"\n\n[serve.clients.alice]", 1))
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"pad":"` + strings.Repeat("x", 2048) + `"}}}`
	req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer alice-token-0123456789")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d, want 413", resp.StatusCode)
	}

	open := start(t, strings.Split(testConfig, "[serve.clients.alice]")[0])
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skip("cannot listen on 0.0.0.0:", err)
	}
	defer ln.Close()
	if err := open.g.Serve(context.Background(), ln); !errors.Is(err, gateway.ErrUnauthenticated) {
		t.Errorf("Serve beyond loopback without tokens = %v; want ErrUnauthenticated", err)
	}
}

// TestServeCommand runs `toolhost serve --stdio` as a real child process
// and drives it with the go-sdk client over its stdin and stdout.
func TestServeCommand(t *testing.T) {
	bin := testutil.GoBinary(t, "./cmd/toolhost")
	dir := t.TempDir()
	cfgPath := dir + "/toolhost.toml"
	src := strings.ReplaceAll(strings.Split(testConfig, "[serve.clients.alice]")[0], "@FIXTURE@", testutil.Fixture(t))
	if err := os.WriteFile(cfgPath, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := exec.Command(bin, "--config", cfgPath, "serve", "--stdio")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-client"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	if names := toolNames(t, cs); !slices.Contains(names, "fx__echo") {
		t.Errorf("tools over stdio = %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "child"}})
	if err != nil || text(res) != "child" {
		t.Errorf("call = %+v, %v\nstderr:\n%s", res, err, stderr.String())
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
}
