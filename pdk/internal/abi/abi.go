// Package abi is the raw Extism kernel ABI (module "extism:host/env") as seen
// from a standard-Go wasip1 guest, plus the export dispatch table.
//
// Under GOOS=wasip1 the functions talk to the real kernel through
// //go:wasmimport (kernel_wasip1.go). On any other GOOS they talk to an
// in-process fake (fake.go) so the pdk and plugins can be tested with plain
// `go test` on the host.
//
// Memory model: the kernel owns a separate linear memory. A "block" is an
// i64 offset into it; bytes cross by load/store calls (8 bytes per call with
// the _u64 variants, 1 byte with _u8). The kernel resets its memory before
// every call, so blocks leaked by a call are reclaimed by the next one.
package abi

import "sync"

// Log levels, numbered as the kernel's get_log_level reports them.
const (
	LevelTrace int32 = iota
	LevelDebug
	LevelInfo
	LevelWarn
	LevelError
)

// Handler serves one export: it gets the call's input bytes and returns the
// output bytes, or an error that is reported through error_set.
type Handler func(input []byte) ([]byte, error)

type export struct {
	h       Handler
	release func([]byte)
}

var (
	mu       sync.Mutex
	handlers = map[string]export{}
)

// Export registers the handler behind an export name ("list_tools", ...).
// It is called from package init functions.
func Export(name string, h Handler) { ExportReleasing(name, h, nil) }

// ExportReleasing is Export for a handler that recycles its output buffers:
// Run hands each output to release once the kernel holds a copy of it.
func ExportReleasing(name string, h Handler, release func(out []byte)) {
	mu.Lock()
	defer mu.Unlock()
	handlers[name] = export{h, release}
}

// Lookup returns the handler registered for an export name.
func Lookup(name string) (Handler, bool) {
	mu.Lock()
	defer mu.Unlock()
	e, ok := handlers[name]
	return e.h, ok
}

// Run serves one export call end to end: read the input, run the handler,
// set the output. It returns the export's result code: 0 on success, -1 after
// error_set on failure.
func Run(name string) int32 {
	mu.Lock()
	e, ok := handlers[name]
	mu.Unlock()
	if !ok {
		SetError("pdk: no handler registered for export " + name)
		return -1
	}
	out, err := e.h(Input())
	if err != nil {
		SetError(err.Error())
		return -1
	}
	SetOutput(out)
	if e.release != nil {
		e.release(out)
	}
	return 0
}
