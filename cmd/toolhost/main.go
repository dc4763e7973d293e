// Command toolhost hosts tools for AI agents: it loads a configuration of MCP
// servers and WebAssembly plugins and lists, calls and inspects their tools.
//
//	toolhost [--config PATH] [--log-level LEVEL] COMMAND [flags]
//
// Exit status: 0 success; 1 the tool ran and returned an error result; 2 a
// usage or configuration error; 3 the call could not be made (unknown tool,
// backend unavailable, timeout, ...); 4 the policy or a profile denied it.
package main

import (
	"os"
)

func main() {
	oneShotGC(os.Args[1:]) // oneshot.go
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
