package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/toolhost/toolhost/internal/testutil"
)

// catalogueConfig serves testdata/catalogue/tools.json (324 real tool
// definitions) through the cataloguefixture: the default profile (stdio)
// in search mode, client "full" in full mode, client "search" in search
// mode.
const catalogueConfig = `
[servers.cat]
command = "@CATALOGUE_FIXTURE@"
args    = ["@CATALOGUE@"]
prefix  = ""
startup_timeout = "5m"

[serve]
catalogue = "search"

[profiles.all]
catalogue = "full"

[profiles.found]

[serve.clients.full]
token   = "full-token-0123456789"
profile = "all"

[serve.clients.search]
token   = "search-token-012345678"
profile = "found"
`

func catalogueSource(t *testing.T) string {
	t.Helper()
	r := strings.NewReplacer("@CATALOGUE_FIXTURE@", testutil.GoBinary(t, "./testdata/cataloguefixture"),
		"@CATALOGUE@", filepath.Join(testutil.Root(), "testdata", "catalogue", "tools.json"))
	return r.Replace(catalogueConfig)
}

// catalogueQuery is one entry of testdata/catalogue/queries.json.
type catalogueQuery struct {
	Query    string   `json:"query"`
	Expected string   `json:"expected"`
	Also     []string `json:"also"`
}

func (q catalogueQuery) hit(names []string) bool {
	for _, n := range names {
		if n == q.Expected || slices.Contains(q.Also, n) {
			return true
		}
	}
	return false
}

// listed returns the tools array of tools/list as JSON (what a client
// hands the model) and its size in cl100k_base tokens.
func listed(t *testing.T, cs *mcp.ClientSession, enc *tiktoken.Tiktoken) (n int, bytes []byte, tokens int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var all []*mcp.Tool
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, tl)
	}
	b, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	return len(all), b, len(enc.Encode(string(b), nil, nil))
}

// TestSearchCatalogue measures issue 27, item 2, through the gateway on the
// 324-tool catalogue: the size of tools/list in bytes and cl100k_base
// tokens with catalogue = "full" vs "search" (at least 90% less), and
// search_tools's top-3 accuracy on the written queries (at least 90%).
func TestSearchCatalogue(t *testing.T) {
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	f := start(t, catalogueSource(t))
	url := serveLoopback(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	full, err := connectHTTP(ctx, url, "full-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	srch, err := connectHTTP(ctx, url, "search-token-012345678")
	if err != nil {
		t.Fatal(err)
	}
	defer srch.Close()

	nFull, bFull, tokFull := listed(t, full, enc)
	nSearch, bSearch, tokSearch := listed(t, srch, enc)
	if nFull < 300 {
		t.Fatalf("full mode lists %d tools, want the catalogue's 300+", nFull)
	}
	if nSearch != 2 {
		t.Fatalf("search mode lists %d tools, want search_tools and call_tool", nSearch)
	}
	byteCut := 100 * (1 - float64(len(bSearch))/float64(len(bFull)))
	tokCut := 100 * (1 - float64(tokSearch)/float64(tokFull))
	t.Logf("tools/list: full %d tools, %d bytes, %d tokens; search %d tools, %d bytes, %d tokens; %.1f%% fewer bytes, %.1f%% fewer tokens (cl100k_base)",
		nFull, len(bFull), tokFull, nSearch, len(bSearch), tokSearch, byteCut, tokCut)
	if byteCut < 90 || tokCut < 90 {
		t.Errorf("search mode saves %.1f%% bytes and %.1f%% tokens, want at least 90%%", byteCut, tokCut)
	}

	b, err := os.ReadFile(filepath.Join(testutil.Root(), "testdata", "catalogue", "queries.json"))
	if err != nil {
		t.Fatal(err)
	}
	var qs []catalogueQuery
	if err := json.Unmarshal(b, &qs); err != nil {
		t.Fatal(err)
	}
	if len(qs) < 50 {
		t.Fatalf("%d queries, want at least 50", len(qs))
	}
	top1, top3, resultTokens := 0, 0, 0
	for _, q := range qs {
		res := call(t, srch, "search_tools", map[string]any{"query": q.Query, "limit": 3})
		names := foundNames(found(t, res))
		resultTokens += len(enc.Encode(text(res), nil, nil))
		if q.hit(names[:min(1, len(names))]) {
			top1++
		}
		if q.hit(names) {
			top3++
		} else {
			t.Logf("miss: %q: want %s, got %v", q.Query, q.Expected, names)
		}
	}
	pct := 100 * float64(top3) / float64(len(qs))
	t.Logf("search_tools on %d queries: top-1 %d (%.1f%%), top-3 %d (%.1f%%); a limit-3 answer averages %d tokens",
		len(qs), top1, 100*float64(top1)/float64(len(qs)), top3, pct, resultTokens/len(qs))
	if pct < 90 {
		t.Errorf("top-3 accuracy %.1f%%, want at least 90%%", pct)
	}
}

// TestSearchCatalogueClients is issue 27's "done when" (a): a go-sdk client
// and the TypeScript SDK client, through a real toolhost serve --stdio on
// the 324-tool catalogue, find a tool with search_tools and call it with
// call_tool.
func TestSearchCatalogueClients(t *testing.T) {
	bin := testutil.GoBinary(t, "./cmd/toolhost")
	cfgPath := filepath.Join(t.TempDir(), "toolhost.toml")
	if err := os.WriteFile(cfgPath, []byte(catalogueSource(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"owner": "toolhost", "repo": "toolhost", "title": "found by search"}
	want := func(t *testing.T, res *mcp.CallToolResult) {
		t.Helper()
		var got map[string]any
		if res.IsError || json.Unmarshal([]byte(text(res)), &got) != nil || got["title"] != "found by search" {
			t.Fatalf("call_tool result %+v (%s): want the fixture's echo of the arguments", res, text(res))
		}
	}
	t.Run("go-sdk", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		cmd := exec.Command(bin, "--config", cfgPath, "serve", "--stdio")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-search"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, stderr.String())
		}
		defer cs.Close()
		if names := toolNames(t, cs); !slices.Equal(names, []string{"call_tool", "search_tools"}) {
			t.Fatalf("tools = %v", names)
		}
		hits := found(t, call(t, cs, "search_tools", map[string]any{"query": "open a new issue in a GitHub repo", "limit": 3}))
		if len(hits) == 0 || hits[0].Name != "github__create_issue" {
			t.Fatalf("found %v, want github__create_issue first", foundNames(hits))
		}
		want(t, call(t, cs, "call_tool", map[string]any{"name": hits[0].Name, "arguments": args}))
	})
	t.Run("typescript", func(t *testing.T) {
		ts := testutil.TSClient(t)
		script := filepath.Join(filepath.Dir(ts), "search.mjs")
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		a, _ := json.Marshal(args)
		cmd := exec.CommandContext(ctx, "node", script, "stdio", bin, "--config", cfgPath, "serve", "--stdio")
		cmd.Env = append(os.Environ(), "QUERY=open a new issue in a GitHub repo", "ARGS="+string(a))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("search.mjs: %v\n%s", err, stderr.String())
		}
		var r struct {
			Tools, Found []string
			Structured   bool
			Result       *mcp.CallToolResult
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("output %s: %v", out, err)
		}
		if !slices.Equal(r.Tools, []string{"call_tool", "search_tools"}) || len(r.Found) == 0 || r.Found[0] != "github__create_issue" || !r.Structured {
			t.Fatalf("TypeScript client: %s", out)
		}
		want(t, r.Result)
	})
}

// BenchmarkSearchCatalogue compares, on the 324-tool catalogue, what a
// client pays to see the catalogue: tools/list in full mode, against
// search_tools (limit 5) in search mode, both over an in-memory MCP
// session, and Host.Search alone.
//
//	go test -run XXX -bench SearchCatalogue -benchmem -count 5 ./host/gateway/
func BenchmarkSearchCatalogue(b *testing.B) {
	src := strings.NewReplacer("@CATALOGUE_FIXTURE@", testutil.GoBinary(b, "./testdata/cataloguefixture"),
		"@CATALOGUE@", filepath.Join(testutil.Root(), "testdata", "catalogue", "tools.json")).Replace(catalogueConfig)
	session := func(b *testing.B, src string) (*fixture, *mcp.ClientSession) {
		f := startTB(b, src)
		ctx, cancel := context.WithCancel(context.Background())
		ct, st := mcp.NewInMemoryTransports()
		served := make(chan error, 1)
		go func() { served <- f.g.ServeTransport(ctx, st) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		b.Cleanup(func() {
			cs.Close()
			cancel()
			<-served
		})
		return f, cs
	}
	fs, search := session(b, src)
	_, full := session(b, strings.Replace(src, `catalogue = "search"`, `catalogue = "full"`, 1))
	ctx := context.Background()
	queries := []string{"open a new issue in a GitHub repo", "take a screenshot of the page", "list the pods in kubernetes", "convert a time between timezones"}
	b.Run("tools-list-full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := full.ListTools(ctx, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("search_tools", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			res, err := search.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": queries[i%len(queries)]}})
			if err != nil || res.IsError {
				b.Fatal(err)
			}
		}
	})
	b.Run("host.Search", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := fs.h.Search(ctx, queries[i%len(queries)], 5); err != nil {
				b.Fatal(err)
			}
		}
	})
}
