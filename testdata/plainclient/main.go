// Command plainclient is the baseline of the one-shot CLI benchmark
// (cmd/toolhost BenchmarkOneShotCall, docs/BENCHMARKS.md "One-shot CLI call
// (issue 26, item 3)"): a plain go-sdk client program that starts an MCP
// server over stdio, initializes, calls one tool, prints its text, closes
// the session (the go-sdk closes the server's stdin and waits for it to
// exit) and exits. It does nothing else: no configuration, no policy, no
// audit, no supervision.
//
//	plainclient [-tool NAME] [-args JSON] COMMAND [ARG...]
//
// Exit status 0 on a result (printed to stdout), 1 on any error (on stderr).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	tool := flag.String("tool", "echo", "the tool to call")
	args := flag.String("args", `{"text":"hi"}`, "its arguments, a JSON object")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: plainclient [-tool NAME] [-args JSON] COMMAND [ARG...]")
		os.Exit(2)
	}
	if err := call(*tool, *args, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "plainclient:", err)
		os.Exit(1)
	}
}

func call(tool, args string, command []string) error {
	var arguments map[string]any
	if err := json.Unmarshal([]byte(args), &arguments); err != nil {
		return fmt.Errorf("-args: %w", err)
	}
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "plainclient", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(command[0], command[1:]...)}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
	if err != nil {
		return err
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			fmt.Println(t.Text)
		}
	}
	if res.IsError {
		return fmt.Errorf("%s returned an error result", tool)
	}
	return nil
}
