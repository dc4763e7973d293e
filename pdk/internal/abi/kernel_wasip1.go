//go:build wasip1

package abi

import "encoding/binary"

//go:wasmimport extism:host/env input_length
func extismInputLength() uint64

//go:wasmimport extism:host/env input_load_u8
func extismInputLoadU8(offset uint64) uint32

//go:wasmimport extism:host/env input_load_u64
func extismInputLoadU64(offset uint64) uint64

//go:wasmimport extism:host/env alloc
func extismAlloc(length uint64) uint64

//go:wasmimport extism:host/env free
func extismFree(offset uint64)

//go:wasmimport extism:host/env length
func extismLength(offset uint64) uint64

//go:wasmimport extism:host/env load_u8
func extismLoadU8(offset uint64) uint32

//go:wasmimport extism:host/env load_u64
func extismLoadU64(offset uint64) uint64

//go:wasmimport extism:host/env store_u8
func extismStoreU8(offset uint64, value uint32)

//go:wasmimport extism:host/env store_u64
func extismStoreU64(offset uint64, value uint64)

//go:wasmimport extism:host/env output_set
func extismOutputSet(offset, length uint64)

//go:wasmimport extism:host/env error_set
func extismErrorSet(offset uint64)

//go:wasmimport extism:host/env config_get
func extismConfigGet(key uint64) uint64

//go:wasmimport extism:host/env var_get
func extismVarGet(key uint64) uint64

//go:wasmimport extism:host/env var_set
func extismVarSet(key, value uint64)

//go:wasmimport extism:host/env http_request
func extismHTTPRequest(request, body uint64) uint64

//go:wasmimport extism:host/env http_status_code
func extismHTTPStatusCode() int32

//go:wasmimport extism:host/env http_headers
func extismHTTPHeaders() uint64

//go:wasmimport extism:host/env log_trace
func extismLogTrace(offset uint64)

//go:wasmimport extism:host/env log_debug
func extismLogDebug(offset uint64)

//go:wasmimport extism:host/env log_info
func extismLogInfo(offset uint64)

//go:wasmimport extism:host/env log_warn
func extismLogWarn(offset uint64)

//go:wasmimport extism:host/env log_error
func extismLogError(offset uint64)

//go:wasmimport extism:host/env get_log_level
func extismGetLogLevel() int32

// Bytes cross the kernel boundary 8 at a time with the _u64 calls, which the
// Extism SDK serves directly in Go. The _u8 calls go through the kernel's own
// Wasm module (an export lookup and a call each, ≈ 1.5 µs in go-sdk v1.7.1,
// ten times a _u64 call), so a block of 8 bytes or more is never finished
// byte by byte: its last 8 bytes are loaded or stored with one _u64 call that
// overlaps the previous word. Only blocks shorter than 8 bytes use _u8 calls.

// Input returns a copy of the current call's input. The slice has at least 7
// bytes of spare capacity, so that readers can load whole words.
func Input() []byte {
	n := extismInputLength()
	buf := make([]byte, n, n+7)
	var i uint64
	for ; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], extismInputLoadU64(i))
	}
	if i < n {
		if n >= 8 {
			binary.LittleEndian.PutUint64(buf[n-8:], extismInputLoadU64(n-8))
		} else {
			for ; i < n; i++ {
				buf[i] = byte(extismInputLoadU8(i))
			}
		}
	}
	return buf
}

// alloc copies b into a new kernel block and returns its offset.
// An empty b still gets a (zero-length) block so the offset is valid.
func alloc(b []byte) uint64 {
	n := uint64(len(b))
	off := extismAlloc(n)
	var i uint64
	for ; i+8 <= n; i += 8 {
		extismStoreU64(off+i, binary.LittleEndian.Uint64(b[i:]))
	}
	if i < n {
		if n >= 8 {
			extismStoreU64(off+n-8, binary.LittleEndian.Uint64(b[n-8:]))
		} else {
			for ; i < n; i++ {
				extismStoreU8(off+i, uint32(b[i]))
			}
		}
	}
	return off
}

// read copies a kernel block out; it does not free it.
func read(off uint64) []byte {
	n := extismLength(off)
	buf := make([]byte, n)
	var i uint64
	for ; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], extismLoadU64(off+i))
	}
	if i < n {
		if n >= 8 {
			binary.LittleEndian.PutUint64(buf[n-8:], extismLoadU64(off+n-8))
		} else {
			for ; i < n; i++ {
				buf[i] = byte(extismLoadU8(off + i))
			}
		}
	}
	return buf
}

// take reads a block returned to the guest and frees it. Offset 0 means
// "nothing" and yields nil.
func take(off uint64) []byte {
	if off == 0 {
		return nil
	}
	b := read(off)
	extismFree(off)
	return b
}

// SetOutput sets the call's output. The kernel keeps the block.
func SetOutput(b []byte) {
	extismOutputSet(alloc(b), uint64(len(b)))
}

// SetError sets the call's error message. The kernel keeps the block.
func SetError(msg string) {
	extismErrorSet(alloc([]byte(msg)))
}

// Config returns the host-provided configuration value for key.
// The kernel does not free the key block (go-sdk v1.7.1 configGet), so we do.
func Config(key string) (string, bool) {
	k := alloc([]byte(key))
	v := extismConfigGet(k)
	extismFree(k)
	if v == 0 {
		return "", false
	}
	return string(take(v)), true
}

// VarGet returns the Extism variable key. The kernel frees the key block.
func VarGet(key string) ([]byte, bool) {
	v := extismVarGet(alloc([]byte(key)))
	if v == 0 {
		return nil, false
	}
	return take(v), true
}

// VarSet sets (or, with a nil value, deletes) the Extism variable key.
// The kernel frees both blocks. It traps if the host disabled vars or the
// store is full.
func VarSet(key string, value []byte) {
	var v uint64
	if value != nil {
		v = alloc(value)
	}
	extismVarSet(alloc([]byte(key)), v)
}

// LogLevel returns the host's current minimum log level (LevelTrace..LevelError;
// anything above LevelError means logging is off).
func LogLevel() int32 { return extismGetLogLevel() }

// Log sends msg to the host log at level. The kernel frees the block.
func Log(level int32, msg string) {
	if level < extismGetLogLevel() {
		return
	}
	off := alloc([]byte(msg))
	switch level {
	case LevelTrace:
		extismLogTrace(off)
	case LevelDebug:
		extismLogDebug(off)
	case LevelInfo:
		extismLogInfo(off)
	case LevelWarn:
		extismLogWarn(off)
	default:
		extismLogError(off)
	}
}

// HTTP performs request (kernel JSON {"url","method","headers"}) with body
// (nil for none) through the host. It returns the status code, the response
// headers as the kernel's JSON object (nil when the host does not expose
// them) and the response body. The kernel frees the request and body blocks.
//
// A request the host refuses (host not allowed, transport error, body over
// the host's limit) traps inside the kernel and aborts the whole call.
func HTTP(request, body []byte) (status int32, header, respBody []byte) {
	var b uint64
	if body != nil {
		b = alloc(body)
	}
	resp := extismHTTPRequest(alloc(request), b)
	status = extismHTTPStatusCode()
	respBody = take(resp)
	header = take(extismHTTPHeaders())
	return status, header, respBody
}
