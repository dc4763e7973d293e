package gateway_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host/gateway"
	"github.com/toolhost/toolhost/internal/testutil"
)

const searchConfig = `
[servers.fx]
command = "@FIXTURE@"
args    = ["-faults"]
startup_timeout = "5m"

[policy]
deny = ["fx__crash", "fx__freeze", "fx__hang"]

[serve]
catalogue = "search"
always    = ["fx__echo"]

[profiles.review]
allow = ["fx__echo", "fx__add"]
always = []

[profiles.ops]
catalogue = "full"
allow = ["fx__echo", "fx__add"]

[serve.clients.alice]
token   = "alice-token-0123456789"
profile = "review"

[serve.clients.olga]
token   = "olga-token-01234567890"
profile = "ops"
`

// found decodes the structuredContent of a search_tools result.
func found(t *testing.T, res *mcp.CallToolResult) []gateway.FoundTool {
	t.Helper()
	if res.IsError {
		t.Fatalf("search_tools: %s", text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Tools []gateway.FoundTool }
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	var fromText struct{ Tools []gateway.FoundTool }
	if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil || len(fromText.Tools) != len(out.Tools) {
		t.Fatalf("text content %q is not the same JSON: %v", text(res), err)
	}
	return out.Tools
}

func foundNames(ts []gateway.FoundTool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// TestSearchMode: with catalogue = "search", a client lists search_tools,
// call_tool and the always tools; search_tools finds a tool with its
// schema, call_tool calls it through the pipeline (audited under the inner
// tool's name, the profile's policy applied), a tool the backend adds is
// announced with list_changed and found, and a direct tools/call of an
// unlisted catalogue tool is served.
func TestSearchMode(t *testing.T) {
	f := start(t, searchConfig)
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "search-client"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs := memSession(t, f, client, nil)
	if got := toolNames(t, cs); !slices.Equal(got, []string{"call_tool", "fx__echo", "search_tools"}) {
		t.Fatalf("tools/list in search mode = %v", got)
	}

	hits := found(t, call(t, cs, "search_tools", map[string]any{"query": "sum of two numbers", "limit": 3}))
	if len(hits) == 0 || hits[0].Name != "fx__add" || hits[0].Description == "" || hits[0].InputSchema == nil {
		t.Fatalf("search_tools = %+v, want fx__add first with its definition", hits)
	}
	if len(hits) > 3 {
		t.Fatalf("limit 3 gave %d", len(hits))
	}
	res := call(t, cs, "call_tool", map[string]any{"name": "fx__add", "arguments": map[string]any{"a": 40, "b": 2}})
	if res.IsError || !strings.Contains(text(res), "42") {
		t.Fatalf("call_tool fx__add = %+v %s", res, text(res))
	}
	testutil.Eventually(t, waitTimeout, func() bool {
		for _, r := range f.records() {
			if r.Tool == "fx__add" && r.Client == "stdio" && r.Outcome == "ok" {
				return true
			}
		}
		return false
	}, "no audit record names fx__add")

	// The policy applies to call_tool as to any call: refused, and
	// audited under the inner tool's name.
	res = call(t, cs, "call_tool", map[string]any{"name": "fx__crash"})
	if !res.IsError || !strings.Contains(text(res), "not allowed") {
		t.Fatalf("call_tool of a denied tool = %s, want refused", text(res))
	}
	testutil.Eventually(t, waitTimeout, func() bool {
		for _, r := range f.records() {
			if r.Tool == "fx__crash" && r.Outcome != "ok" {
				return true
			}
		}
		return false
	}, "the refusal of fx__crash is not audited")
	if names := foundNames(found(t, call(t, cs, "search_tools", map[string]any{"query": "crash the server process exit"}))); slices.Contains(names, "fx__crash") {
		t.Fatalf("search_tools found a denied tool: %v", names)
	}

	// A direct call of a catalogue tool search mode does not list is
	// served; an unknown name is still the protocol's unknown tool.
	if res := call(t, cs, "fx__add", map[string]any{"a": 1, "b": 2}); res.IsError || !strings.Contains(text(res), "3") {
		t.Fatalf("direct call of a hidden tool: %s", text(res))
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__nope"}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("unknown tool: %v", err)
	}

	// A tool the backend adds: list_changed (search_tools's description
	// counts the tools), and search finds it.
	for len(changed) > 0 {
		<-changed
	}
	call(t, cs, "fx__add_tool", map[string]any{"name": "zebra_stripes"})
	select {
	case <-changed:
	case <-time.After(waitTimeout):
		t.Fatal("no notifications/tools/list_changed after the catalogue changed")
	}
	testutil.Eventually(t, waitTimeout, func() bool {
		names := foundNames(found(t, call(t, cs, "search_tools", map[string]any{"query": "zebra stripes"})))
		return len(names) > 0 && names[0] == "fx__zebra_stripes"
	}, "the added tool is not found")

	// Profiles: alice (review, always = []) sees the meta-tools only and
	// finds only what review allows; olga (ops, catalogue = "full") sees
	// every tool she may call.
	url := serveLoopback(t, f)
	alice, err := connectHTTP(ctx, url, "alice-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	if got := toolNames(t, alice); !slices.Equal(got, []string{"call_tool", "search_tools"}) {
		t.Fatalf("alice's tools = %v", got)
	}
	if names := foundNames(found(t, call(t, alice, "search_tools", map[string]any{"query": "echo add big fail sleep", "limit": 50}))); !slices.Equal(slices.Sorted(slices.Values(names)), []string{"fx__add", "fx__echo"}) {
		t.Fatalf("alice found %v, want review's tools only", names)
	}
	if res := call(t, alice, "call_tool", map[string]any{"name": "fx__big", "arguments": map[string]any{"size": 1}}); !res.IsError || !strings.Contains(text(res), "not allowed") {
		t.Fatalf("alice's call_tool outside review = %s", text(res))
	}
	olga, err := connectHTTP(ctx, url, "olga-token-01234567890")
	if err != nil {
		t.Fatal(err)
	}
	defer olga.Close()
	if got := toolNames(t, olga); !slices.Equal(got, []string{"fx__add", "fx__echo"}) {
		t.Fatalf("olga's tools (full) = %v", got)
	}
}

// TestSearchModeBadArguments: hostile or wrong arguments of the meta-tools
// are isError results that say what to fix, never a crash.
func TestSearchModeBadArguments(t *testing.T) {
	f := start(t, searchConfig)
	cs := memSession(t, f, mcp.NewClient(&mcp.Implementation{Name: "c"}, nil), nil)
	for _, c := range []struct {
		tool string
		args any
		want string
	}{
		{"search_tools", map[string]any{}, `"query" is required`},
		{"search_tools", map[string]any{"query": 3}, `"query" must be a string`},
		{"search_tools", map[string]any{"query": "x", "limit": 0}, "limit 0 is out of range"},
		{"search_tools", map[string]any{"query": "x", "limit": 51}, "limit 51 is out of range"},
		{"search_tools", map[string]any{"query": "x", "limit": 2.5}, `"limit" must be a whole number`},
		{"search_tools", map[string]any{"query": "x", "lmit": 2}, "unknown field"},
		{"search_tools", map[string]any{"query": ""}, "no searchable words"},
		{"search_tools", map[string]any{"query": "the of a"}, "no searchable words"},
		{"search_tools", map[string]any{"query": strings.Repeat("a", 5000)}, "at most 4096"},
		{"search_tools", map[string]any{"query": strings.Repeat("ab ", 400)}, "query too long"},
		{"call_tool", map[string]any{}, `"name" is required`},
		{"call_tool", map[string]any{"name": ""}, `"name" is required`},
		{"call_tool", map[string]any{"name": "call_tool"}, "unknown tool"},
		{"call_tool", map[string]any{"name": "search_tools"}, "unknown tool"},
		{"call_tool", map[string]any{"name": "fx__echo", "arguments": "x"}, "must be an object"},
		{"call_tool", map[string]any{"name": "fx__echo", "arguments": []any{1}}, "must be an object"},
		{"call_tool", map[string]any{"name": "fx__nope"}, "unknown tool"},
		{"call_tool", map[string]any{"name": "fx__add", "arguments": map[string]any{"a": "x"}}, "a"},
	} {
		res := call(t, cs, c.tool, c.args)
		if !res.IsError || !strings.Contains(text(res), c.want) {
			t.Errorf("%s %v = %v %q, want an error with %q", c.tool, c.args, res.IsError, text(res), c.want)
		}
	}
	// Still serving.
	if res := call(t, cs, "call_tool", map[string]any{"name": "fx__echo", "arguments": map[string]any{"text": "ok"}}); res.IsError || text(res) != "ok" {
		t.Fatalf("after bad calls: %s", text(res))
	}
	if res := call(t, cs, "call_tool", map[string]any{"name": "fx__echo", "arguments": nil}); !res.IsError {
		// fx__echo requires text: null arguments are {} and fail validation.
		t.Fatalf("null arguments: %s", text(res))
	}
}

// TestSearchModeApply: a reload that turns search mode on or off, or
// changes always, changes what the profile's clients list (with
// list_changed), without closing their sessions.
func TestSearchModeApply(t *testing.T) {
	src := strings.Split(searchConfig, "[serve]")[0]
	f := start(t, src)
	changed := make(chan struct{}, 64)
	cs := memSession(t, f, mcp.NewClient(&mcp.Implementation{Name: "c"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	}), nil)
	fullList := toolNames(t, cs)
	if slices.Contains(fullList, "search_tools") || !slices.Contains(fullList, "fx__add") {
		t.Fatalf("full mode lists %v", fullList)
	}
	apply := func(extra string) {
		t.Helper()
		cfg, err := config.Parse([]byte(strings.ReplaceAll(src+extra, "@FIXTURE@", testutil.Fixture(t))), &config.Options{Name: "test.toml"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if _, err := f.h.Apply(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	waitList := func(want []string) {
		t.Helper()
		testutil.Eventually(t, waitTimeout, func() bool { return slices.Equal(toolNames(t, cs), want) }, "tools never became", want)
	}
	apply("[serve]\ncatalogue = \"search\"\nalways = [\"fx__echo\"]\n")
	waitList([]string{"call_tool", "fx__echo", "search_tools"})
	select {
	case <-changed:
	case <-time.After(waitTimeout):
		t.Fatal("no list_changed when search mode came on")
	}
	apply("[serve]\ncatalogue = \"search\"\nalways = [\"fx__add\", \"fx__echo\"]\n")
	waitList([]string{"call_tool", "fx__add", "fx__echo", "search_tools"})
	apply("[serve]\ncatalogue = \"full\"\n")
	waitList(fullList)
}

// FuzzMetaTools calls search_tools and call_tool with arbitrary arguments:
// every call gets an answer (a result, or a JSON-RPC error for arguments
// that are not an object), never a crash, and the gateway keeps serving.
func FuzzMetaTools(f *testing.F) {
	for _, seed := range []string{`{"query":"add numbers"}`, `{"query":"x","limit":50}`, `{"query":"\u0000\uffff"}`,
		`{"name":"fx__echo","arguments":{"text":"a"}}`, `{"name":"fx__add","arguments":null}`, `{"name":"call_tool"}`,
		`{"query":["a"]}`, `{"limit":-1}`, `{}`, `[]`, `null`, `3`, `{"name":{"a":1}}`, `{"query":"` + strings.Repeat("é", 600) + `"}`} {
		f.Add(seed, true)
		f.Add(seed, false)
	}
	fx := startTB(f, searchConfig)
	ctx, cancel := context.WithCancel(context.Background())
	ct, st := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- fx.g.ServeTransport(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "fuzz"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		cancel()
		f.Fatal(err)
	}
	f.Cleanup(func() {
		cs.Close()
		cancel()
		<-served
	})
	f.Fuzz(func(t *testing.T, args string, search bool) {
		if !json.Valid([]byte(args)) {
			return
		}
		name := "call_tool"
		if search {
			name = "search_tools"
		}
		cctx, ccancel := context.WithTimeout(context.Background(), waitTimeout)
		defer ccancel()
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err == nil && res == nil {
			t.Fatalf("%s %s: no result and no error", name, args)
		}
		alive, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "echo"}})
		if err != nil || alive.IsError {
			t.Fatalf("after %s %s the gateway no longer answers: %v", name, args, err)
		}
	})
}

// TestSearchModeShadowedName: a catalogue tool named search_tools (a
// backend without prefix) does not replace the meta-tool, in the listing or
// for a direct call; call_tool reaches it.
func TestSearchModeShadowedName(t *testing.T) {
	f := start(t, `
[servers.fx]
command = "@FIXTURE@"
args    = ["-faults"]
prefix  = ""

[serve]
catalogue = "search"
`)
	cs := memSession(t, f, mcp.NewClient(&mcp.Implementation{Name: "c"}, nil), nil)
	call(t, cs, "call_tool", map[string]any{"name": "add_tool", "arguments": map[string]any{"name": "search_tools"}})
	testutil.Eventually(t, waitTimeout, func() bool {
		hits, err := f.h.Search(context.Background(), "added at run time", 5)
		return err == nil && len(hits) > 0 && hits[0].Name == "search_tools"
	}, "the catalogue never got its search_tools")
	if got := toolNames(t, cs); !slices.Equal(got, []string{"call_tool", "search_tools"}) {
		t.Fatalf("tools = %v", got)
	}
	// The meta-tool answers a direct call...
	if hits := found(t, call(t, cs, "search_tools", map[string]any{"query": "echo"})); len(hits) == 0 {
		t.Fatal("search_tools found nothing")
	}
	// ...and call_tool reaches the catalogue tool (the fixture's added
	// tools answer their own name).
	if res := call(t, cs, "call_tool", map[string]any{"name": "search_tools"}); res.IsError || text(res) != "search_tools" {
		t.Fatalf("call_tool search_tools = %s", text(res))
	}
}
