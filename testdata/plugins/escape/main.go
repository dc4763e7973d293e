// Command escape is an adversarial fixture: its tools "read", "write",
// "create" (O_CREATE|O_EXCL), "readlink", "stat", "rename" (path to
// arguments.to), "fill" (writes arguments.size bytes, a decimal string, in
// 64 KiB chunks, truncating the file first) and "remove" try arguments.path through WASI (the test passes "..",
// absolute paths outside the mounts, and symlinks — existing or dangling —
// pointing out of a mount) and report what happened as text: "ok <content>"
// or "err <error>".
package main

import (
	"os"
	"strconv"

	"github.com/toolhost/toolhost/testdata/plugins/internal/kernel"
)

func main() {}

//go:wasmexport list_tools
func listTools() int32 {
	kernel.Output([]byte(kernel.Tools("read", "write", "create", "readlink", "stat", "rename", "fill", "remove")))
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	in := string(kernel.Input())
	path := kernel.Field(in, "path")
	var out string
	switch kernel.Field(in, "name") {
	case "read":
		b, err := os.ReadFile(path)
		if err != nil {
			out = "err " + err.Error()
		} else {
			out = "ok " + string(b)
		}
	case "write":
		if err := os.WriteFile(path, []byte("pwned"), 0o644); err != nil {
			out = "err " + err.Error()
		} else {
			out = "ok"
		}
	case "create":
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			out = "err " + err.Error()
		} else {
			f.Write([]byte("pwned"))
			f.Close()
			out = "ok"
		}
	case "readlink":
		t, err := os.Readlink(path)
		if err != nil {
			out = "err " + err.Error()
		} else {
			out = "ok " + t
		}
	case "stat":
		st, err := os.Stat(path)
		if err != nil {
			out = "err " + err.Error()
		} else {
			out = "ok " + st.Name()
		}
	case "fill":
		n, _ := strconv.Atoi(kernel.Field(in, "size"))
		f, err := os.Create(path)
		if err == nil {
			chunk := make([]byte, 64<<10)
			for n > 0 && err == nil {
				c := min(n, len(chunk))
				_, err = f.Write(chunk[:c])
				n -= c
			}
			f.Close()
		}
		if err != nil {
			out = "err " + err.Error()
		} else {
			out = "ok"
		}
	case "remove":
		if err := os.Remove(path); err != nil {
			out = "err " + err.Error()
		} else {
			out = "ok"
		}
	case "rename":
		if err := os.Rename(path, kernel.Field(in, "to")); err != nil {
			out = "err " + err.Error()
		} else {
			out = "ok"
		}
	}
	kernel.Output([]byte(kernel.Text(out, false)))
	return 0
}
