// Command escape is an adversarial fixture: its tools "read" and "write" try
// arguments.path through WASI (the test passes "..", absolute paths outside
// the mounts and symlinks pointing out of a mount) and report what happened
// as text: "ok <content>" or "err <error>".
package main

import (
	"os"

	"github.com/toolhost/toolhost/testdata/plugins/internal/kernel"
)

func main() {}

//go:wasmexport list_tools
func listTools() int32 {
	kernel.Output([]byte(kernel.Tools("read", "write")))
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	in := string(kernel.Input())
	path := kernel.Field(in, "path")
	var out string
	switch kernel.Field(in, "name") {
	case "read":
		b, err := os.ReadFile(path)
		if err != nil {
			out = "err " + err.Error()
		} else {
			out = "ok " + string(b)
		}
	case "write":
		if err := os.WriteFile(path, []byte("pwned"), 0o644); err != nil {
			out = "err " + err.Error()
		} else {
			out = "ok"
		}
	}
	kernel.Output([]byte(kernel.Text(out, false)))
	return 0
}
