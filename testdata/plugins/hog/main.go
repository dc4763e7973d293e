// Command hog is an adversarial fixture: its tool "hog" allocates memory
// without bound.
package main

import "github.com/toolhost/toolhost/testdata/plugins/internal/kernel"

func main() {}

var hoard [][]byte

//go:wasmexport list_tools
func listTools() int32 {
	kernel.Output([]byte(kernel.Tools("hog")))
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	for {
		b := make([]byte, 1<<20)
		for i := range b {
			b[i] = byte(i)
		}
		hoard = append(hoard, b)
	}
}
