// Command loop is an adversarial fixture: its tool "loop" never returns.
package main

import "github.com/toolhost/toolhost/testdata/plugins/internal/kernel"

func main() {}

var sink uint64

//go:wasmexport list_tools
func listTools() int32 {
	kernel.Output([]byte(kernel.Tools("loop")))
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	for i := uint64(0); ; i++ {
		sink += i
	}
}
