// Command bigout is an adversarial fixture: its tool "big" returns a 5 MiB
// result (more than the default max_output of 4 MiB).
package main

import (
	"strings"

	"github.com/toolhost/toolhost/testdata/plugins/internal/kernel"
)

func main() {}

//go:wasmexport list_tools
func listTools() int32 {
	kernel.Output([]byte(kernel.Tools("big")))
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	kernel.Output([]byte(kernel.Text(strings.Repeat("x", 5<<20), false)))
	return 0
}
