// Command fdleak is an adversarial fixture: its tool "open" opens
// arguments.path arguments.count times (a decimal string) and never closes
// the files (they stay referenced from a global, across calls on a pooled
// instance). It answers "ok <n>" or "err after <k>: <error>".
package main

import (
	"os"
	"strconv"

	"github.com/toolhost/toolhost/testdata/plugins/internal/kernel"
)

func main() {}

var held []*os.File

//go:wasmexport list_tools
func listTools() int32 {
	kernel.Output([]byte(kernel.Tools("open")))
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	in := string(kernel.Input())
	path := kernel.Field(in, "path")
	n, _ := strconv.Atoi(kernel.Field(in, "count"))
	out := "ok " + strconv.Itoa(n)
	for i := 0; i < n; i++ {
		f, err := os.Open(path)
		if err != nil {
			out = "err after " + strconv.Itoa(i) + ": " + err.Error()
			break
		}
		held = append(held, f)
	}
	kernel.Output([]byte(kernel.Text(out, false)))
	return 0
}
