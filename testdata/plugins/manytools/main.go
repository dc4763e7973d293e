// Command manytools is an adversarial fixture with an unbounded catalogue:
// list_tools answers config "per_page" tools per page (default 1) and a
// nextCursor for config "pages" pages ("0" or unset: never ending).
package main

import (
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/testdata/plugins/internal/kernel"
)

func main() {}

func conf(key string, def int) int {
	if v, ok := kernel.Config(key); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

//go:wasmexport list_tools
func listTools() int32 {
	page, _ := strconv.Atoi(strings.TrimPrefix(kernel.Field(string(kernel.Input()), "cursor"), "c"))
	per, pages := conf("per_page", 1), conf("pages", 0)
	var b strings.Builder
	b.WriteString(`{"tools":[`)
	for i := 0; i < per; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":"p` + strconv.Itoa(page) + `_` + strconv.Itoa(i) + `","inputSchema":{"type":"object"}}`)
	}
	b.WriteString(`]`)
	if pages == 0 || page+1 < pages {
		b.WriteString(`,"nextCursor":"c` + strconv.Itoa(page+1) + `"`)
	}
	b.WriteString(`}`)
	kernel.Output([]byte(b.String()))
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	kernel.Output([]byte(kernel.Text("ok", false)))
	return 0
}
