// Package pdk is the plugin development kit for toolhost: write MCP tools in
// standard Go and build them into an Extism WebAssembly plugin that toolhost
// (or any host that speaks the hyper-mcp "v2" plugin ABI) runs in a sandbox.
//
// A plugin is a package main that registers its tools in an init function.
// Importing pdk is all it takes to export the ABI: pdk itself carries the
// //go:wasmexport functions list_tools and call_tool.
//
//	package main
//
//	import "github.com/toolhost/toolhost/pdk"
//
//	func init() {
//		pdk.Register(pdk.Tool{
//			Name:        "greet",
//			Description: "Greets someone by name.",
//			InputSchema: `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`,
//			Handler: func(c *pdk.Call) (*pdk.Result, error) {
//				var in struct {
//					Name string `json:"name"`
//				}
//				if err := c.Bind(&in); err != nil {
//					return nil, err // becomes an isError result the model can read
//				}
//				return pdk.Text("hello " + in.Name), nil
//			},
//		})
//	}
//
//	func main() {} // required by the toolchain; never called
//
// Build it with Go 1.24 or later (no TinyGo):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o greet.wasm .
//
// -buildmode=c-shared is required: it makes a WASI reactor whose _initialize
// export runs the package init functions (and so Register) before the first
// call; main is never run, so do not register tools in main.
//
// # The ABI (hyper-mcp "v2")
//
// Every export is func() int32 and returns 0 on success; on failure it sets
// the Extism error (error_set) and returns -1.
//
//   - list_tools: input {"context": {...}}; output {"tools": [<MCP Tool>...]}
//     in registration order.
//   - call_tool: input {"request": {"name", "arguments", "_meta"}, "context":
//     {...}}; output an MCP CallToolResult {"content": [...],
//     "structuredContent": {...}, "isError": bool}.
//
// call_tool fails (returns -1) only for protocol problems: malformed input,
// an unknown tool name, or a registration error. Whatever the tool itself
// reports, including a Go error returned by a Handler and invalid arguments,
// is a successful call with an isError result, as the MCP spec (2025-06-18,
// "Error Handling" under Tools) asks. A panic is not recovered: it is logged
// and aborts the call, and the host replaces the instance (see Handler).
//
// # Results
//
// Text, Image, Structured, Errorf and NewResult build results; TextContent,
// ImageContent, AudioContent, ResourceLink, TextResource and BlobResource
// build content blocks. Structured(v) sets structuredContent to v and also adds
// the same JSON as a text block, for clients that read only content.
//
// # What the host provides
//
//   - Config(key): the plugin's configuration table from the host config.
//   - Log and Logf: lines in the host's log for this plugin (a plugin's
//     stdout and stderr are normally discarded).
//   - HTTP: requests made by the host, only to hosts in allowed_hosts.
//   - Files: the host mounts directories (allowed_paths) with WASI, so plain
//     os.ReadFile, os.WriteFile, os.ReadDir and io/fs work on the mounted
//     guest paths (e.g. /data/notes.txt). Nothing else is visible.
//   - Time: time.Now is the real clock only when the host enables it; a
//     sandbox without it sees a fixed fake clock (wazero's default).
//
// Go globals live as long as the Wasm instance; a host that pools instances
// keeps them between calls, a host that uses a fresh instance per call does
// not. Do not rely on either.
//
// # Testing
//
// Outside GOOS=wasip1, pdk runs against an in-process fake kernel, so tools
// can be tested with plain `go test` on the host; package
// github.com/toolhost/toolhost/pdk/pdktest calls them through the same JSON
// the host sends and sets configuration, HTTP handlers and log levels.
//
// The raw Extism kernel ABI (memory blocks, input/output, config, vars, HTTP,
// logging) is in internal/abi and is not part of the API.
package pdk
