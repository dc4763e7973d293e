// Command panic is an adversarial fixture: its tool "panic" panics.
package main

import "github.com/toolhost/toolhost/testdata/plugins/internal/kernel"

func main() {}

//go:wasmexport list_tools
func listTools() int32 {
	kernel.Output([]byte(kernel.Tools("panic")))
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	panic("fixture panic: " + kernel.Field(string(kernel.Input()), "text"))
}
