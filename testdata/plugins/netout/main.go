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
	kernel.Output([]byte(kernel.Tools("fetch", "many")))
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	in := string(kernel.Input())
	url := kernel.Field(in, "url")
	if kernel.Field(in, "name") == "many" {
		n, _ := strconv.Atoi(kernel.Field(in, "count"))
		total := 0
		for i := 0; i < n; i++ {
			_, body := kernel.HTTP(`{"url":` + kernel.Quote(url) + `,"method":"GET"}`)
			total += len(body)
		}
		kernel.Output([]byte(kernel.Text("ok "+strconv.Itoa(total), false)))
		return 0
	}
	st, body := kernel.HTTP(`{"url":` + kernel.Quote(url) + `,"method":"GET","headers":{"X-Fixture":"netout"}}`)
	kernel.Output([]byte(kernel.Text(strconv.Itoa(int(st))+" "+string(body), false)))
	return 0
}
