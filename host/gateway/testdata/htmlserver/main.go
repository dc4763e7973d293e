// Command htmlserver is a stdio MCP server whose strings are hostile to a
// web page: its serverInfo name and its tool's description carry
// <script>, an event-handler attribute and a javascript: URL. The
// dashboard tests check that a browser shows them as text.
package main

import (
	"context"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hostile is the text hidden in the server's strings.
const Hostile = `<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">javascript:alert(3)</a>`

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "html" + Hostile, Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "xss", Description: "Describes itself with " + Hostile, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: Hostile}}}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
