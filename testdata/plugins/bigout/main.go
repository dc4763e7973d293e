// Command bigout is an adversarial fixture: its tool "big" returns a result
// of arguments.text bytes (a decimal number; default 5 MiB, more than the
// default max_output of 4 MiB).
package main

import (
	"strconv"
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
	n, err := strconv.Atoi(kernel.Field(string(kernel.Input()), "text"))
	if err != nil {
		n = 5 << 20
	}
	kernel.Output([]byte(kernel.Text(strings.Repeat("x", n), false)))
	return 0
}
