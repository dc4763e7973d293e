// Command errflood is an adversarial fixture that floods the host with text
// that is not a normal result: list_tools fails with an error_set message of
// config "list_error" bytes when that key is set; the tool "err" fails with
// an error_set message of arguments.size bytes (a decimal string); "out"
// returns a text result of arguments.size bytes.
package main

import (
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/testdata/plugins/internal/kernel"
)

func main() {}

//go:wasmexport list_tools
func listTools() int32 {
	if v, ok := kernel.Config("list_error"); ok {
		n, _ := strconv.Atoi(v)
		kernel.Error(strings.Repeat("E", n))
		return 1
	}
	kernel.Output([]byte(kernel.Tools("err", "out")))
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	in := string(kernel.Input())
	n, _ := strconv.Atoi(kernel.Field(in, "size"))
	switch kernel.Field(in, "name") {
	case "err":
		kernel.Error(strings.Repeat("E", n))
		return 1
	default:
		kernel.Output([]byte(kernel.Text(strings.Repeat("o", n), false)))
		return 0
	}
}
