package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// codeModeConfig: the stdio fixture (fx) and the time plugin, profile
// "coder" with code mode (alice), the default profile without (bob). The
// coder profile does not allow fx__delete_all: a program's call of it is
// denied inside the program.
const codeModeConfig = `
[host]
cache_dir = "@CACHE@"

[servers.fx]
command = "@FIXTURE@"
args    = ["-faults", "-extra"]
startup_timeout = "5m"

[plugins.time]
path    = "@TIME@"
timeout = "5m"

[code_mode]
plugin  = "@JSRUN@"
timeout = "5m"
max_calls = 20

[profiles.coder]
allow     = ["fx__add", "fx__echo", "fx__add_tool", "fx__zeta", "time__*"]
code_mode = true

[serve.clients.alice]
token   = "alice-token-0123456789"
profile = "coder"

[serve.clients.bob]
token = "bob-token-0123456789ab"
`

// combineProgram calls a stdio server's tool and a Wasm plugin's, combines
// their results, and catches the denied call.
const combineProgram = `
const sum = await tools.fx__add({a: 40, b: 2});
const t = await tools.time__convert_time({time: "2025-07-01T09:30:00Z", target_timezone: "Asia/Tokyo"});
let denied = "";
try { await tools.fx__delete_all({}) } catch (e) { denied = e.code + ": " + e.message }
console.log("sum", sum.structuredContent.sum);
return {sum: sum.structuredContent.sum, tokyo: t.structuredContent.target.time, denied};`

// codeModeSource is codeModeConfig with its paths filled in (all but the
// fixture's).
func codeModeSource(t *testing.T) string {
	t.Helper()
	root := filepath.Join(testutil.Root(), "plugins")
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = t.TempDir()
	}
	return strings.NewReplacer(
		"@TIME@", wasmbuild.Build(t, root, "./time"),
		"@JSRUN@", wasmbuild.Build(t, root, "./jsrun"),
		"@CACHE@", filepath.Join(cache, "toolhost", "wasm-test"),
	).Replace(codeModeConfig)
}

func startCodeMode(t *testing.T) *fixture {
	t.Helper()
	return start(t, codeModeSource(t))
}

type combined struct {
	Result struct {
		Sum    float64 `json:"sum"`
		Tokyo  string  `json:"tokyo"`
		Denied string  `json:"denied"`
	} `json:"result"`
	Logs []string `json:"logs"`
}

func checkCombined(t *testing.T, res *mcp.CallToolResult) {
	t.Helper()
	if res.IsError {
		t.Fatalf("run_code: error result %v", resultTextOf(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var c combined
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	if c.Result.Sum != 42 || c.Result.Tokyo != "2025-07-01T18:30:00+09:00" || !strings.HasPrefix(c.Result.Denied, "failed: fx__delete_all:") ||
		!strings.Contains(c.Result.Denied, "not allowed") || !slices.Equal(c.Logs, []string{"sum 42"}) {
		t.Fatalf("combined result %s", b)
	}
}

func resultTextOf(res *mcp.CallToolResult) string {
	var s []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s = append(s, tc.Text)
		}
	}
	return strings.Join(s, "\n")
}

// TestCodeModeGoSDKClient (issue 27, done-when (b)): the go-sdk client
// through the gateway over Streamable HTTP lists run_code (with the
// profile's tools declared in TypeScript) only in a profile with code
// mode, and runs a program that combines a stdio server's tool and a Wasm
// plugin's, the denied inner call failing inside the program. Every inner
// call is audited under the client's profile, naming the run.
func TestCodeModeGoSDKClient(t *testing.T) {
	f := startCodeMode(t)
	ctx, url, cs := aliceOverHTTP(t, f)
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var desc string
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
		if tool.Name == "run_code" {
			desc = tool.Description
		}
	}
	for _, want := range []string{"declare const tools: {", "fx__add(args: {a: number; b: number}): Promise<CallToolResult>;", "time__convert_time(args: {"} {
		if !strings.Contains(desc, want) {
			t.Fatalf("run_code description lacks %q (tools %v):\n%s", want, names, desc)
		}
	}
	if strings.Contains(desc, "fx__delete_all") {
		t.Error("run_code declares a tool the profile does not allow")
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": combineProgram}})
	if err != nil {
		t.Fatal(err)
	}
	checkCombined(t, res)

	// Audit: run_code's record, and its three inner calls naming it.
	var run host.AuditRecord
	testutil.Eventually(t, waitTimeout, func() bool {
		for _, r := range f.records() {
			if r.Tool == "run_code" {
				run = r
				return true
			}
		}
		return false
	})
	if run.Profile != "coder" || run.Client != "alice" || run.Outcome != host.OutcomeOK || run.CorrelationID == "" || run.Backend != "code_mode" || run.ArgsHMAC == "" {
		t.Fatalf("run_code record %+v", run)
	}
	inner := map[string]host.AuditRecord{}
	for _, r := range f.records() {
		if r.Parent == run.CorrelationID {
			inner[r.Tool] = r
		}
	}
	for tool, outcome := range map[string]string{"fx__add": host.OutcomeOK, "time__convert_time": host.OutcomeOK, "fx__delete_all": host.OutcomeDenied} {
		r, ok := inner[tool]
		if !ok || r.Outcome != outcome || r.Profile != "coder" || r.Client != "alice" {
			t.Errorf("inner record of %s: %+v (found %v), want outcome %s in profile coder for alice", tool, r, ok, outcome)
		}
	}

	// A thrown error is an isError result with the JS stack; invalid
	// arguments of an inner call are the pipeline's validation error.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": "function boom() { throw new TypeError('no') }\nboom()"}})
	if err != nil || !res.IsError || !strings.Contains(resultTextOf(res), "Uncaught TypeError: no") || !strings.Contains(resultTextOf(res), "at boom (run_code.js") {
		t.Fatalf("thrown: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": `const r = await tools.fx__add({a: "x"}); return r.isError + " " + r.content[0].text`}})
	if err != nil || res.IsError || !strings.Contains(resultTextOf(res), `"true `) {
		t.Fatalf("invalid inner arguments: %v %q", err, resultTextOf(res))
	}
	// No code: an isError result.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(resultTextOf(res), "code string") {
		t.Fatalf("no code: %v %+v", err, res)
	}

	// The declarations follow the catalogue: a tool added at run time
	// appears in run_code's description.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__add_tool", Arguments: map[string]any{"name": "zeta"}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, waitTimeout, func() bool {
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			return false
		}
		for _, tool := range lt.Tools {
			if tool.Name == "run_code" {
				return strings.Contains(tool.Description, "fx__zeta(args: {}): Promise<CallToolResult>;")
			}
		}
		return false
	}, "run_code's description did not follow the catalogue")

	// bob's profile has no code mode.
	cb, err := connectHTTP(ctx, url, "bob-token-0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	lt, err = cb.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range lt.Tools {
		if tool.Name == "run_code" {
			t.Fatal("run_code listed for a profile without code mode")
		}
	}
}

// TestCodeModeTypeScriptClient (issue 27, done-when (b)): the TypeScript
// SDK's client runs the same program through the gateway: over HTTP with
// alice's token, and over stdio with a real `toolhost serve --stdio` child
// process whose [serve] profile is coder.
func TestCodeModeTypeScriptClient(t *testing.T) {
	args, _ := json.Marshal(map[string]string{"code": combineProgram})
	check := func(t *testing.T, r tsResult) {
		t.Helper()
		if !slices.Contains(r.Tools, "run_code") {
			t.Fatalf("tools %v", r.Tools)
		}
		if r.Result.IsError || len(r.Result.Content) == 0 {
			t.Fatalf("result %+v", r.Result)
		}
		text := r.Result.Content[0].Text
		for _, want := range []string{"sum 42", `"sum":42`, `"tokyo":"2025-07-01T18:30:00+09:00"`, `"denied":"failed: fx__delete_all:`} {
			if !strings.Contains(text, want) {
				t.Errorf("result text %q lacks %q", text, want)
			}
		}
	}
	t.Run("http", func(t *testing.T) {
		f := startCodeMode(t)
		url := serveLoopback(t, f)
		check(t, runTSClient(t, []string{"TOKEN=alice-token-0123456789", "CALL=run_code", "ARGS=" + string(args)}, "http", url))
	})
	t.Run("stdio", func(t *testing.T) {
		bin := testutil.GoBinary(t, "./cmd/toolhost")
		src := strings.ReplaceAll(codeModeSource(t), "@FIXTURE@", testutil.Fixture(t))
		src = strings.Split(src, "[serve.clients.alice]")[0] + "\n[serve]\nprofile = \"coder\"\n"
		cfgPath := filepath.Join(t.TempDir(), "toolhost.toml")
		if err := os.WriteFile(cfgPath, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		check(t, runTSClient(t, []string{"CALL=run_code", "ARGS=" + string(args)}, "stdio", bin, "--config", cfgPath, "serve", "--stdio"))
	})
}

// readmeBlock returns the first fenced block of lang under the README
// heading.
func readmeBlock(t *testing.T, heading, lang string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.Root(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cur *strings.Builder
	h, skipping := "", false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case skipping:
			skipping = line != "```"
		case cur == nil && strings.HasPrefix(line, "```"):
			if h == heading && strings.TrimPrefix(line, "```") == lang {
				cur = &strings.Builder{}
			} else {
				skipping = true
			}
		case cur != nil && line == "```":
			return cur.String()
		case cur != nil:
			cur.WriteString(line + "\n")
		case strings.HasPrefix(line, "#"):
			h = strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
	}
	t.Fatalf("README has no %s block under %q", lang, heading)
	return ""
}

// TestCodeModeReadme: the README's [code_mode] configuration loads, and its
// program runs as it says against servers named as in the bundled
// configuration (fixture, time), the denied call caught.
func TestCodeModeReadme(t *testing.T) {
	const heading = "Code mode: `run_code`"
	toml := readmeBlock(t, heading, "toml")
	program := readmeBlock(t, heading, "js")
	root := filepath.Join(testutil.Root(), "plugins")
	toml = strings.Replace(toml, `"plugins/jsrun.wasm"`, `"`+wasmbuild.Build(t, root, "./jsrun")+`"`, 1)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = t.TempDir()
	}
	src := fmt.Sprintf("[host]\ncache_dir = %q\n\n[servers.fixture]\ncommand = \"@FIXTURE@\"\nstartup_timeout = \"5m\"\n\n[plugins.time]\npath = %q\ntimeout = \"5m\"\n\n[policy]\ndeny = [\"*__delete_*\", \"fixture__crash\"]\n\n",
		filepath.Join(cache, "toolhost", "wasm-test"), wasmbuild.Build(t, root, "./time")) + toml
	src = strings.Replace(src, `timeout    = "30s"`, `timeout    = "5m"`, 1) // a cold compile under -race
	f := start(t, src)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- f.g.ServeTransport(ctx, st) }()
	defer func() { cancel(); <-served }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "readme"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": program}})
	if err != nil {
		t.Fatal(err)
	}
	text := resultTextOf(res)
	if res.IsError || !strings.Contains(text, `refused: failed fixture__crash: tool "fixture__crash" is not allowed`) || !strings.Contains(text, `{"sum":42,"tokyo":"`) {
		t.Fatalf("README program: %q (isError %v)", text, res.IsError)
	}
}

// TestCodeModeSearch: in a profile with catalogue = "search" and code mode,
// run_code stays listed beside search_tools and call_tool, and a program's
// searchTools finds among the tools the profile may call (the profile's
// own search: host.View.Search), not the others; in a profile listing its
// full catalogue searchTools is not defined.
func TestCodeModeSearch(t *testing.T) {
	f := start(t, codeModeSource(t)+`
[profiles.finder]
allow     = ["fx__add", "fx__echo"]
code_mode = true
catalogue = "search"

[serve.clients.carol]
token   = "carol-token-0123456789"
profile = "finder"
`)
	url := serveLoopback(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	run := func(token, code string) *mcp.CallToolResult {
		t.Helper()
		cs, err := connectHTTP(ctx, url, token)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(lt.Tools, func(tool *mcp.Tool) bool { return tool.Name == "run_code" }) {
			t.Fatalf("run_code not listed for %s", token)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": code}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run("carol-token-0123456789", `
const hits = await searchTools("add two numbers", 5);
const names = hits.map(h => h.name);
const sum = await tools[names[0]]({a: 2, b: 3});
return {names, sum: sum.structuredContent.sum};`)
	b, _ := json.Marshal(res.StructuredContent)
	var got struct {
		Result struct {
			Names []string `json:"names"`
			Sum   float64  `json:"sum"`
		} `json:"result"`
	}
	if res.IsError || json.Unmarshal(b, &got) != nil || len(got.Result.Names) == 0 || got.Result.Names[0] != "fx__add" || got.Result.Sum != 5 {
		t.Fatalf("search in run_code: %s %s", b, resultTextOf(res))
	}
	for _, n := range got.Result.Names {
		if n != "fx__add" && n != "fx__echo" {
			t.Fatalf("searchTools found %q, which the profile does not allow (%v)", n, got.Result.Names)
		}
	}
	res = run("alice-token-0123456789", `return typeof searchTools;`)
	if res.IsError || !strings.Contains(resultTextOf(res), "undefined") {
		t.Fatalf("searchTools in a full-catalogue profile: %s", resultTextOf(res))
	}
}

// aliceOverHTTP serves f on loopback and connects the go-sdk client to it
// as alice; the session and its context end with the test.
func aliceOverHTTP(t *testing.T, f *fixture) (context.Context, string, *mcp.ClientSession) {
	t.Helper()
	url := serveLoopback(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	cs, err := connectHTTP(ctx, url, "alice-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return ctx, url, cs
}

// TestCodeModeRateLimit: a run_code call takes a token of its client's
// rate, as its inner calls do: with alice at "2/m", a run with one inner
// call costs two tokens, so the second run is refused (rate_limited, with
// Retry-After in _meta) before its program runs, and audited as a denied
// call under the limit. Without it, a client could spend the code mode
// plugin's CPU without limit through programs that call no tool.
func TestCodeModeRateLimit(t *testing.T) {
	src := strings.Replace(codeModeSource(t), "[serve.clients.alice]\n", "[serve.clients.alice]\nrate = \"2/m\"\n", 1)
	f := start(t, src)
	ctx, url, cs := aliceOverHTTP(t, f)
	program := map[string]any{"code": `const r = await tools.fx__add({a: 1, b: 2}); return r.structuredContent.sum`}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: program})
	if err != nil || res.IsError {
		t.Fatalf("first run: %v %q", err, resultTextOf(res))
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": `return "ran"`}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || res.Meta[host.MetaErrorKind] != string(host.KindRateLimited) || res.Meta[host.MetaRetryAfter] == nil ||
		!strings.Contains(resultTextOf(res), `serve.clients.alice.rate "2/m"`) {
		t.Fatalf("second run: %q meta %v, want refused by alice's rate", resultTextOf(res), res.Meta)
	}
	var denied host.AuditRecord
	testutil.Eventually(t, waitTimeout, func() bool {
		for _, r := range f.records() {
			if r.Tool == "run_code" && r.Decision == "deny" {
				denied = r
				return true
			}
		}
		return false
	})
	if denied.Rule != `serve.clients.alice.rate "2/m"` || denied.Outcome != host.OutcomeRateLimited || denied.Client != "alice" {
		t.Fatalf("refused run's record %+v", denied)
	}
	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), "\nmcp_rate_limited_total 1\n") {
		t.Errorf("/metrics does not count the refusal:\n%s", metrics)
	}
}
