// Command loop is an adversarial fixture: its tool "loop" never returns,
// and with config hang_list = "1" neither does list_tools (so the plugin
// never finishes starting).
package main

import "github.com/toolhost/toolhost/testdata/plugins/internal/kernel"

func main() {}

var sink uint64

//go:wasmexport list_tools
func listTools() int32 {
	if v, _ := kernel.Config("hang_list"); v == "1" {
		spin()
	}
	kernel.Output([]byte(kernel.Tools("loop")))
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	spin()
	return 0
}

func spin() {
	for i := uint64(0); ; i++ {
		sink += i
	}
}
