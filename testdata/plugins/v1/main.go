// Command v1 is an mcp.run-servlet ("v1") fixture: exports describe and call;
// its tool "hello" answers "hello, <arguments.who>".
package main

import "github.com/toolhost/toolhost/testdata/plugins/internal/kernel"

func main() {}

//go:wasmexport describe
func describe() int32 {
	kernel.Output([]byte(`{"tools":[{"name":"hello","description":"greets","inputSchema":{"type":"object","properties":{"who":{"type":"string"}}}}]}`))
	return 0
}

//go:wasmexport call
func call() int32 {
	in := string(kernel.Input())
	kernel.Output([]byte(kernel.Text("hello, "+kernel.Field(in, "who"), false)))
	return 0
}
