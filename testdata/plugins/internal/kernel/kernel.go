//go:build wasip1

// Package kernel is a minimal raw binding of the Extism kernel imports
// (module "extism:host/env"), written the way a third-party plugin would:
// no PDK, just //go:wasmimport. Pointers are offsets into the kernel's own
// memory, not into this module's linear memory.
package kernel

import "unsafe"

//go:wasmimport extism:host/env input_length
func inputLength() uint64

//go:wasmimport extism:host/env input_load_u64
func inputLoadU64(off uint64) uint64

//go:wasmimport extism:host/env input_load_u8
func inputLoadU8(off uint64) uint32

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmimport extism:host/env free
func free(p uint64)

//go:wasmimport extism:host/env length
func length(p uint64) uint64

//go:wasmimport extism:host/env load_u8
func loadU8(p uint64) uint32

//go:wasmimport extism:host/env load_u64
func loadU64(p uint64) uint64

//go:wasmimport extism:host/env store_u8
func storeU8(p uint64, v uint32)

//go:wasmimport extism:host/env store_u64
func storeU64(p uint64, v uint64)

//go:wasmimport extism:host/env output_set
func outputSet(p, n uint64)

//go:wasmimport extism:host/env error_set
func errorSet(p uint64)

//go:wasmimport extism:host/env config_get
func configGet(p uint64) uint64

//go:wasmimport extism:host/env http_request
func httpRequest(req, body uint64) uint64

//go:wasmimport extism:host/env http_status_code
func httpStatusCode() int32

//go:wasmimport extism:host/env log_info
func logInfo(p uint64)

// Input returns the call's input bytes.
func Input() []byte {
	n := inputLength()
	b := make([]byte, n)
	var i uint64
	for ; i+8 <= n; i += 8 {
		*(*uint64)(unsafe.Pointer(&b[i])) = inputLoadU64(i)
	}
	for ; i < n; i++ {
		b[i] = byte(inputLoadU8(i))
	}
	return b
}

func put(b []byte) uint64 {
	n := uint64(len(b))
	p := alloc(n)
	var i uint64
	for ; i+8 <= n; i += 8 {
		storeU64(p+i, *(*uint64)(unsafe.Pointer(&b[i])))
	}
	for ; i < n; i++ {
		storeU8(p+i, uint32(b[i]))
	}
	return p
}

func get(p uint64) []byte {
	n := length(p)
	b := make([]byte, n)
	var i uint64
	for ; i+8 <= n; i += 8 {
		*(*uint64)(unsafe.Pointer(&b[i])) = loadU64(p + i)
	}
	for ; i < n; i++ {
		b[i] = byte(loadU8(p + i))
	}
	return b
}

// Output sets the call's output.
func Output(b []byte) { outputSet(put(b), uint64(len(b))) }

// Error sets the call's error message; the export must then return non-zero.
func Error(msg string) { errorSet(put([]byte(msg))) }

// Config returns the plugin config value for key.
func Config(key string) (string, bool) {
	k := put([]byte(key))
	v := configGet(k)
	free(k)
	if v == 0 {
		return "", false
	}
	s := string(get(v))
	free(v)
	return s, true
}

// HTTP performs an http_request with the given request JSON
// ({"url","method","headers"}) and returns the status and body.
func HTTP(reqJSON string) (int32, []byte) {
	r := httpRequest(put([]byte(reqJSON)), 0)
	st := httpStatusCode()
	if r == 0 {
		return st, nil
	}
	b := get(r)
	free(r)
	return st, b
}

// Log logs msg at info level through the host.
func Log(msg string) { logInfo(put([]byte(msg))) }
