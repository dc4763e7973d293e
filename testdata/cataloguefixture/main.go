// Command cataloguefixture is an MCP server over stdio that serves the
// tools of a catalogue file (default testdata/catalogue/tools.json, or the
// path given as its one argument): the 324 real tool definitions collected
// for tool search (issue 27, item 2; testdata/catalogue/README.md). Each
// tool is served under its "name" in the file, with its title,
// description, inputSchema, outputSchema and annotations as collected; a
// call of any of them echoes its arguments as JSON text (tools with an
// outputSchema get them as structuredContent too, which may not match the
// schema: call a tool without one to test a call path). Built by make
// build as bin/cataloguefixture.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	path := "testdata/catalogue/tools.json"
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatalf("cataloguefixture: %v", err)
	}
	var tools []*mcp.Tool
	if err := json.Unmarshal(b, &tools); err != nil {
		log.Fatalf("cataloguefixture: %s: %v", path, err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "cataloguefixture", Version: "1"}, nil)
	for _, t := range tools {
		srv.AddTool(t, echo(t.OutputSchema != nil))
	}
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "cataloguefixture:", err)
		os.Exit(1)
	}
}

func echo(structured bool) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(args)}}}
		if structured {
			res.StructuredContent = args
		}
		return res, nil
	}
}
