// Command counter keeps state in a global: its tool "incr" returns how many
// times it ran on this instance (pooled isolation shows persistence, fresh
// shows none).
package main

import (
	"strconv"

	"github.com/toolhost/toolhost/testdata/plugins/internal/kernel"
)

func main() {}

var n int

//go:wasmexport list_tools
func listTools() int32 {
	kernel.Output([]byte(kernel.Tools("incr")))
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	n++
	kernel.Output([]byte(kernel.Text(strconv.Itoa(n), false)))
	return 0
}
