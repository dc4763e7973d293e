package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testutil"
)

// TestIdempotencyReadme runs the README's "Idempotency" example against a
// real `toolhost serve --listen` (its store an SQLite file): the README's
// curl loop (its tool made the fixture's echo) calls the backend once,
// and a go-sdk client sending _meta["io.toolhost/idempotency-key"] gets
// the stored result the second time. The fixture's stats count the
// backend's calls.
func TestIdempotencyReadme(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	state := t.TempDir()
	blocks := mdBlocks(t, filepath.Join(testutil.Root(), "README.md"))
	toml := block(t, blocks, "Idempotency", "toml", 0)
	script := block(t, blocks, "Idempotency", "sh", 0)
	// The README's tool is the fixture's echo here.
	toml = strings.ReplaceAll(toml, "tickets__create", "fx__echo")
	script = strings.ReplaceAll(strings.ReplaceAll(script, "tickets__create", "fx__echo"), `"title"`, `"text"`)
	toml = strings.Replace(toml, "[store]\n", "[store]\nurl = \"sqlite://"+filepath.Join(state, "toolhost.db")+"\"\n", 1)
	cfg := writeConfig(t, "[servers.fx]\ncommand = \"@FIXTURE@\"\nargs = [\"-faults\"]\n\n"+toml)

	url := testutil.ServeHTTP(t, testutil.GoBinary(t, "./cmd/toolhost"), cfg, "XDG_STATE_HOME="+state, "HOME="+state)
	if !strings.Contains(script, "URL=http://127.0.0.1:8808") {
		t.Fatalf("the README's script changed:\n%s", script)
	}
	script = strings.Replace(script, "URL=http://127.0.0.1:8808", "URL="+url, 1)
	script = strings.ReplaceAll(script, "curl -s ", "echo; "+curl+" -sS ")
	out, err := exec.Command("sh", "-ec", script).CombinedOutput()
	if err != nil {
		t.Fatalf("the README's commands: %v\n%s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 || !strings.Contains(lines[0], `"attempts":1`) || !strings.Contains(lines[1], `"attempts":0`) ||
		!strings.Contains(lines[1], `"io.toolhost/idempotent-replay":true`) || !strings.Contains(lines[1], `Printer on fire`) {
		t.Fatalf("the README's commands printed:\n%s", out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "idem", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var results []*mcp.CallToolResult
	for range 2 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "over MCP"},
			Meta: mcp.Meta{"io.toolhost/idempotency-key": "mcp-key-1"}})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
		results = append(results, res)
	}
	if results[0].Meta["io.toolhost/idempotent-replay"] != nil || results[1].Meta["io.toolhost/idempotent-replay"] != true {
		t.Fatalf("replay marks: %v, %v", results[0].Meta, results[1].Meta)
	}
	if b, _ := json.Marshal(results[1].Content); !strings.Contains(string(b), "over MCP") {
		t.Fatalf("replayed content %s", b)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__stats"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"calls":3`) { // one REST call, one MCP call, this one
		t.Fatalf("the backend served %s, want 3 calls", b)
	}
}
