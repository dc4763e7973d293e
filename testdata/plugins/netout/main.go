// Command netout is an adversarial fixture: its tool "fetch" calls
// http_request on arguments.url (the test points it outside the allowlist,
// at an allowed host that redirects outside, at 127.0.0.1 and at
// 169.254.169.254) and returns "<status> <body>".
package main

import (
	"strconv"

	"github.com/toolhost/toolhost/testdata/plugins/internal/kernel"
)

func main() {}

//go:wasmexport list_tools
func listTools() int32 {
	kernel.Output([]byte(kernel.Tools("fetch")))
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	url := kernel.Field(string(kernel.Input()), "url")
	st, body := kernel.HTTP(`{"url":` + kernel.Quote(url) + `,"method":"GET","headers":{"X-Fixture":"netout"}}`)
	kernel.Output([]byte(kernel.Text(strconv.Itoa(int(st))+" "+string(body), false)))
	return 0
}
