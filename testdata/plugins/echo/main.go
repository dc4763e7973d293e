// Command echo is a trivial, well-behaved v2 fixture plugin: tools "echo"
// (returns arguments.text, prefixed by config "echo_prefix"), "config"
// (returns config value arguments.key), "log" (logs arguments.text), "print"
// (writes arguments.text to stdout and stderr), "fail" (error_set + return 1),
// "rc" (returns 1 without error_set), "badjson" (outputs invalid JSON), "sleep"
// (sleeps for the duration in arguments.text); one
// resource and one prompt.
package main

import (
	"os"
	"time"

	"github.com/toolhost/toolhost/testdata/plugins/internal/kernel"
)

func main() {}

//go:wasmexport list_tools
func listTools() int32 {
	// Read during list_tools so that Inspect can report the key.
	kernel.Config("echo_prefix")
	kernel.Output([]byte(kernel.Tools("echo", "config", "log", "print", "fail", "rc", "badjson", "sleep")))
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	in := string(kernel.Input())
	arg := kernel.Field(in, "text")
	switch kernel.Field(in, "name") {
	case "echo":
		p, _ := kernel.Config("echo_prefix")
		kernel.Output([]byte(kernel.Text(p+arg, false)))
	case "config":
		v, ok := kernel.Config(kernel.Field(in, "key"))
		if !ok {
			v = "<missing>"
		}
		kernel.Output([]byte(kernel.Text(v, false)))
	case "log":
		kernel.Log(arg)
		kernel.Output([]byte(kernel.Text("logged", false)))
	case "print":
		os.Stdout.WriteString(arg + "\n")
		os.Stderr.WriteString(arg + "\n")
		kernel.Output([]byte(kernel.Text("printed", false)))
	case "fail":
		kernel.Error("echo: asked to fail")
		return 1
	case "rc":
		return 1
	case "sleep":
		// Sleeps for the duration in arguments.text ("10s"): a slow tool for
		// the deadline and cancellation checks of the conformance suite.
		d, _ := time.ParseDuration(arg)
		time.Sleep(d)
		kernel.Output([]byte(kernel.Text("slept "+arg, false)))
	case "badjson":
		kernel.Output([]byte(`{"content": [ not json`))
	default:
		kernel.Error("unknown tool " + kernel.Field(in, "name"))
		return 1
	}
	return 0
}

//go:wasmexport list_resources
func listResources() int32 {
	kernel.Output([]byte(`{"resources":[{"uri":"echo://hello","name":"hello","mimeType":"text/plain"}]}`))
	return 0
}

//go:wasmexport read_resource
func readResource() int32 {
	uri := kernel.Field(string(kernel.Input()), "uri")
	kernel.Output([]byte(`{"contents":[{"uri":` + kernel.Quote(uri) + `,"mimeType":"text/plain","text":"hello"}]}`))
	return 0
}

//go:wasmexport list_prompts
func listPrompts() int32 {
	kernel.Output([]byte(`{"prompts":[{"name":"greet","description":"says hello"}]}`))
	return 0
}

//go:wasmexport get_prompt
func getPrompt() int32 {
	name := kernel.Field(string(kernel.Input()), "name")
	kernel.Output([]byte(`{"messages":[{"role":"user","content":{"type":"text","text":` + kernel.Quote("prompt "+name) + `}}]}`))
	return 0
}
