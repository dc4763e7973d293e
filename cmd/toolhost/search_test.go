package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// TestToolSearchReadme runs the README's tool-search section: its
// configuration passes toolhost check (which prints the modes), and a
// go-sdk client of toolhost serve --stdio on it lists call_tool,
// search_tools and the time__* tools, finds jq__jq with the README's query
// and gets the README's result from call_tool; the client configuration is
// valid JSON.
func TestToolSearchReadme(t *testing.T) {
	const heading = "Tool search: large catalogues without flooding the model"
	blocks := mdBlocks(t, filepath.Join(testutil.Root(), "README.md"))
	src := block(t, blocks, heading, "toml", 0)
	var client map[string]any
	if err := json.Unmarshal([]byte(block(t, blocks, heading, "json", 0)), &client); err != nil {
		t.Fatalf("the client configuration is not JSON: %v", err)
	}
	plugins := filepath.Join(testutil.Root(), "plugins")
	src = strings.NewReplacer(`"plugins/time.wasm"`, `"`+wasmbuild.Build(t, plugins, "./time")+`"`,
		`"plugins/jq.wasm"`, `"`+wasmbuild.Build(t, plugins, "./jq")+`"`).Replace(src)
	cfg := writeConfig(t, src)

	code, stdout, stderr := runCLI("--config", cfg, "check")
	if code != 0 || !strings.Contains(stdout, "catalogue: search (search_tools, call_tool; always listed: time__*)") ||
		!strings.Contains(stdout, "catalogue of profile ops: full") {
		t.Fatalf("check: exit %d\n%s\n%s", code, stdout, stderr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.Command(testutil.GoBinary(t, "./cmd/toolhost"), "--config", cfg, "serve", "--stdio")
	var errb strings.Builder
	cmd.Stderr = &errb
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "readme"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, errb.String())
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{"call_tool", "search_tools", "time__add_time", "time__convert_time", "time__current_time", "time__time_between"}; !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "filter JSON with an expression", "limit": 3}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools: %v %+v", err, res)
	}
	var found struct {
		Tools []struct{ Name, Description string }
	}
	if got := res.Content[0].(*mcp.TextContent).Text; json.Unmarshal([]byte(got), &found) != nil || len(found.Tools) == 0 ||
		found.Tools[0].Name != "jq__jq" || !strings.HasPrefix(found.Tools[0].Description, "Run a jq filter (gojq dialect) over JSON") {
		t.Fatalf("search_tools = %s", got)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "jq__jq", "arguments": map[string]any{"filter": ".a", "input": map[string]any{"a": 1}}}})
	if err != nil || res.IsError || strings.TrimSpace(res.Content[0].(*mcp.TextContent).Text) != "1" {
		t.Fatalf("call_tool jq__jq: %v %+v", err, res)
	}
}
