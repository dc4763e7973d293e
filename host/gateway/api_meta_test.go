package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
)

// forgingServer is a real Streamable HTTP MCP server whose tool returns
// an isError result with the host's own _meta key, claiming a kind.
func forgingServer(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "forger", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "forge", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "forged"}},
			Meta: mcp.Meta{host.MetaErrorKind: "timeout", "example.com/kept": "yes"}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "xss", Description: hostileDescription, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "</script><img src=x onerror=alert(1)>"}}}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

const hostileDescription = "<script>alert(1)</script><a href=\"javascript:alert(2)\">x</a>"

const metaConfig = `
[servers.fx]
command = "@FIXTURE@"
args    = ["-faults"]
startup_timeout = "5m"

[servers.slow]
command = "@FIXTURE@"
timeout = "300ms"
health_check = "none"
startup_timeout = "5m"
tools = ["sleep"]

[servers.forge]
url = "@FORGE@"
`

// TestErrorMetaOverMCP: over MCP (a go-sdk client), every isError result
// the host or the gateway makes carries its error kind in
// _meta["io.toolhost/error"], the same kind the REST API answers with; a
// tool's own isError result has none, and a backend cannot forge one.
func TestErrorMetaOverMCP(t *testing.T) {
	f := start(t, strings.ReplaceAll(metaConfig, "@FORGE@", forgingServer(t)+"/mcp"))
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "meta-client"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}})
	cs := memSession(t, f, client, nil)
	ctx := context.Background()
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		kind string // "" for none
	}{
		{"fx__add", map[string]any{"a": "one", "b": 2}, host.KindInvalidArguments},
		{"slow__sleep", map[string]any{"ms": 60000}, host.KindTimeout},
		{"fx__crash", map[string]any{}, host.KindBackendError},
		{"fx__fail", map[string]any{"message": "own"}, ""},
		{"forge__forge", map[string]any{}, ""},
	} {
		res := call(c.tool, c.args)
		got, has := res.Meta[host.MetaErrorKind]
		if !res.IsError || (c.kind == "" && has) || (c.kind != "" && got != c.kind) {
			t.Errorf("%s: isError %v, _meta %v; want isError with kind %q", c.tool, res.IsError, res.Meta, c.kind)
		}
		if kind := host.ResultKind(res); c.kind == "" && kind != host.KindToolError {
			t.Errorf("%s: ResultKind %q, want tool_error", c.tool, kind)
		}
		if c.tool == "forge__forge" && res.Meta["example.com/kept"] != "yes" {
			t.Errorf("forge: the backend's other _meta keys were dropped: %v", res.Meta)
		}
	}

	// A tool disabled at run time leaves tools/list with list_changed,
	// and comes back.
	if err := f.h.DisableTool("fx__echo"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, waitTimeout, func() bool { return !slices.Contains(toolNames(t, cs), "fx__echo") }, "fx__echo still listed after DisableTool")
	<-changed
	if _, err := f.h.CallTool(ctx, "fx__echo", map[string]any{"text": "x"}); host.ErrorKind(err) != host.KindDisabled {
		t.Errorf("call of a disabled tool: %v", err)
	}
	if err := f.h.EnableTool("fx__echo"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, waitTimeout, func() bool { return slices.Contains(toolNames(t, cs), "fx__echo") }, "fx__echo not listed after EnableTool")
	if got := text(call("fx__echo", map[string]any{"text": "back"})); got != "back" {
		t.Errorf("echo after EnableTool: %q", got)
	}
}

// TestToolDisabledAcrossApply: a tool disabled at run time stays disabled
// across Host.Apply while the catalogue has it, and is forgotten once its
// backend is removed.
func TestToolDisabledAcrossApply(t *testing.T) {
	src := strings.ReplaceAll(metaConfig, "@FORGE@", forgingServer(t)+"/mcp")
	f := start(t, src)
	ctx := context.Background()
	if err := f.h.DisableTool("forge__forge"); err != nil {
		t.Fatal(err)
	}
	apply := func(text string) {
		t.Helper()
		cfg, err := config.Parse([]byte(strings.ReplaceAll(text, "@FIXTURE@", testutil.Fixture(t))), &config.Options{Name: "test.toml"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.h.Apply(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	apply(src + "\n[policy]\ndeny = [\"fx__hang\"]\n")
	if got := f.h.DisabledTools(); !slices.Equal(got, []string{"forge__forge"}) {
		t.Errorf("after an Apply that keeps the tool: disabled %v", got)
	}
	if _, err := f.h.CallTool(ctx, "forge__forge", nil); host.ErrorKind(err) != host.KindDisabled {
		t.Errorf("call after Apply: %v, want disabled", err)
	}
	apply(strings.Split(src, "[servers.forge]")[0])
	if got := f.h.DisabledTools(); len(got) != 0 {
		t.Errorf("after the backend was removed: disabled %v, want none", got)
	}
}

// TestRESTHostileStrings: a backend's hostile strings (a tool description
// with <script> and javascript:, a result with markup) come out of the
// REST API as JSON strings with <, > and & escaped (\u003c...), never as
// markup a browser would run if the body were sniffed as HTML, and decode
// to the original text.
func TestRESTHostileStrings(t *testing.T) {
	f := start(t, strings.ReplaceAll(metaConfig, "@FORGE@", forgingServer(t)+"/mcp"))
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/v1/mcp/tools?server_id=forge", ""},
		{"GET", "/api/v1/mcp/tools/forge/xss?format=anthropic", ""},
		{"POST", "/api/v1/mcp/invoke", `{"name":"forge__xss","params":{}}`},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: %d %q nosniff %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("X-Content-Type-Options"))
		}
		if strings.ContainsAny(string(raw), "<>") {
			t.Errorf("%s %s: raw < or > in the body: %s", c.method, c.path, raw)
		}
		if c.method == "GET" && !strings.Contains(string(raw), `\u003cscript\u003e`) {
			t.Errorf("%s %s: the description is not there, escaped: %s", c.method, c.path, raw)
		}
	}
}
