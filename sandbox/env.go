package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// The Extism kernel imports, as sandbox provides them.
//
// Every plugin runs in its own wazero runtime (compile.go), where the host
// module envModule ("extism:host/env", the name Extism guests import) holds
// every function of the Extism kernel's env module with the same signatures
// and wire behaviour (docs/PLUGIN-ABI.md §2), as wazero host functions:
//
//   - the kernel itself (alloc, free, length, input_*, output_*, error_*,
//     load_*/store_*, reset, memory_bytes) is the instance's Go kernel
//     (kernel.go): no operation enters Wasm, so a call is one Go→Wasm entry,
//     the export's;
//   - config_get, var_get/var_set, http_request, http_status_code,
//     http_headers, get_log_level and log_* are implemented here, with
//     sandbox's policies (see http.go, guestlog.go): every URL of a request
//     and of its redirects is checked against allowed_hosts, unlike the
//     Extism go-sdk v1.7.1's http_request, which checks only the first.
//
// A host function that must fail the call records the error in
// instance.fault and panics; wazero turns the panic into the guest call's
// error and Plugin maps instance.fault to the returned error.
const envModule = "extism:host/env"

type instKey struct{}

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// callCtx is the context of one guest call: the call's deadline context
// with the instance (instKey), in one value.
type callCtx struct {
	context.Context
	in *instance
}

func (c *callCtx) Value(key any) any {
	if _, ok := key.(instKey); ok {
		return c.in
	}
	return c.Context.Value(key)
}

func instFrom(ctx context.Context) *instance {
	if c, ok := ctx.(*callCtx); ok {
		return c.in
	}
	in, ok := ctx.Value(instKey{}).(*instance)
	if !ok {
		panic("sandbox: host function called outside a sandbox call")
	}
	return in
}

// fail records err as the call's fault and aborts the guest.
func (in *instance) fail(err error) {
	in.fault = err
	panic(err)
}

func (in *instance) failf(kind error, format string, args ...any) {
	in.fail(fmt.Errorf("%w: %s", kind, fmt.Sprintf(format, args...)))
}

// readBlock copies the kernel memory block at off.
func (in *instance) readBlock(off uint64) []byte {
	b, ok := in.k.bytes(off, in.k.length(off))
	if !ok {
		in.failf(ErrTrap, "invalid memory block at offset %d", off)
	}
	return bytes.Clone(b)
}

// cutPrefix renders the first bytes b of a text of total bytes as at most
// MaxErrorText bytes (on a UTF-8 boundary) and a note of how many were cut.
func cutPrefix(b []byte, total int64) string {
	i := min(len(b), MaxErrorText)
	for i > 0 && i < len(b) && !utf8.RuneStart(b[i]) {
		i--
	}
	return string(b[:i]) + "… (" + strconv.FormatInt(total-int64(i), 10) + " bytes cut)"
}

// readBlockPrefix returns a view of at most max bytes of the kernel memory
// block at off (valid until the kernel's next allocation) and the block's
// full length.
func (in *instance) readBlockPrefix(off uint64, max int64) ([]byte, int64) {
	n := in.k.length(off)
	b, ok := in.k.bytes(off, min(n, uint64(max)))
	if !ok {
		in.failf(ErrTrap, "invalid memory block at offset %d", off)
	}
	return b, int64(n)
}

func (in *instance) free(off uint64) { in.k.free(off) }

// writeBlock allocates a kernel block holding b and returns its offset.
func (in *instance) writeBlock(b []byte) uint64 {
	off := in.k.alloc(uint64(len(b)))
	if off == 0 {
		in.failf(ErrMemoryLimit, "the Extism kernel could not allocate %d bytes within the memory cap of %s", len(b), pagesSize(uint64(in.p.memPages)))
	}
	copy(in.k.mem[off:], b)
	return off
}

type hostFn struct {
	name    string
	params  []api.ValueType
	results []api.ValueType
	fn      func(ctx context.Context, in *instance, stack []uint64)
}

var envFuncs = []hostFn{
	{"alloc", []api.ValueType{i64}, []api.ValueType{i64}, func(_ context.Context, in *instance, stack []uint64) {
		off := in.k.alloc(stack[0])
		if off == 0 {
			in.failf(ErrMemoryLimit, "alloc of %d bytes: the Extism kernel memory is full (cap %s, at most %d blocks)", stack[0], pagesSize(uint64(in.p.memPages)), maxBlocks)
		}
		stack[0] = off
	}},
	{"free", []api.ValueType{i64}, nil, func(_ context.Context, in *instance, stack []uint64) {
		in.k.free(stack[0])
	}},
	{"length", []api.ValueType{i64}, []api.ValueType{i64}, func(_ context.Context, in *instance, stack []uint64) {
		stack[0] = in.k.length(stack[0])
	}},
	{"length_unsafe", []api.ValueType{i64}, []api.ValueType{i64}, func(_ context.Context, in *instance, stack []uint64) {
		stack[0] = in.k.length(stack[0])
	}},
	{"input_set", []api.ValueType{i64, i64}, nil, func(_ context.Context, in *instance, stack []uint64) {
		if _, ok := in.k.bytes(stack[0], stack[1]); !ok {
			in.failf(ErrTrap, "input_set out of range at %d", stack[0])
		}
		in.k.input, in.k.inputLen = stack[0], stack[1]
	}},
	{"input_length", nil, []api.ValueType{i64}, func(_ context.Context, in *instance, stack []uint64) {
		stack[0] = in.k.inputLen
	}},
	{"input_offset", nil, []api.ValueType{i64}, func(_ context.Context, in *instance, stack []uint64) {
		stack[0] = in.k.input
	}},
	{"output_length", nil, []api.ValueType{i64}, func(_ context.Context, in *instance, stack []uint64) {
		stack[0] = in.k.outLen
	}},
	{"output_offset", nil, []api.ValueType{i64}, func(_ context.Context, in *instance, stack []uint64) {
		stack[0] = in.k.out
	}},
	{"reset", nil, nil, func(_ context.Context, in *instance, _ []uint64) {
		in.k.reset()
	}},
	{"error_get", nil, []api.ValueType{i64}, func(_ context.Context, in *instance, stack []uint64) {
		stack[0] = in.k.errPtr
	}},
	{"memory_bytes", nil, []api.ValueType{i64}, func(_ context.Context, in *instance, stack []uint64) {
		stack[0] = uint64(len(in.k.mem))
	}},
	// output_set and error_set are checked before anything is kept: an
	// output over max_output fails the call with ErrOutputTooLarge; an
	// error message is cut to MaxErrorText (call_tool/call: counted
	// against max_output, as it becomes the error result).
	{"output_set", []api.ValueType{i64, i64}, nil, func(_ context.Context, in *instance, stack []uint64) {
		if stack[1] > uint64(in.p.maxOutput) {
			in.tooBig = int64(min(stack[1], math.MaxInt64))
			return
		}
		if _, ok := in.k.bytes(stack[0], stack[1]); !ok {
			in.failf(ErrTrap, "output_set out of range at %d (%d bytes)", stack[0], stack[1])
		}
		in.k.out, in.k.outLen = stack[0], stack[1]
	}},
	{"error_set", []api.ValueType{i64}, nil, func(_ context.Context, in *instance, stack []uint64) {
		if stack[0] == 0 {
			in.k.errPtr, in.errMsg = 0, ""
			return
		}
		limit := int64(MaxErrorText)
		if in.export == "call_tool" || in.export == "call" {
			limit = in.p.maxOutput
		}
		b, total := in.readBlockPrefix(stack[0], limit)
		if total <= limit {
			in.errMsg = string(b)
			in.k.errPtr = stack[0]
			return
		}
		if limit == in.p.maxOutput {
			in.tooBig = total
		}
		in.errMsg = cutPrefix(b, total)
		in.k.errPtr = in.writeBlock([]byte(in.errMsg))
	}},
	{"load_u8", []api.ValueType{i64}, []api.ValueType{i32}, func(_ context.Context, in *instance, stack []uint64) {
		v, ok := in.k.loadU8(stack[0])
		if !ok {
			in.failf(ErrTrap, "load_u8 out of range at %d", stack[0])
		}
		stack[0] = v
	}},
	{"load_u64", []api.ValueType{i64}, []api.ValueType{i64}, func(_ context.Context, in *instance, stack []uint64) {
		v, ok := in.k.loadU64(stack[0])
		if !ok {
			in.failf(ErrTrap, "load_u64 out of range at %d", stack[0])
		}
		stack[0] = v
	}},
	{"input_load_u8", []api.ValueType{i64}, []api.ValueType{i32}, func(_ context.Context, in *instance, stack []uint64) {
		v, ok := in.k.loadU8(in.k.input + stack[0])
		if !ok || stack[0] > 1<<32 {
			in.failf(ErrTrap, "input_load_u8 out of range at %d", stack[0])
		}
		stack[0] = v
	}},
	{"input_load_u64", []api.ValueType{i64}, []api.ValueType{i64}, func(_ context.Context, in *instance, stack []uint64) {
		v, ok := in.k.loadU64(in.k.input + stack[0])
		if !ok || stack[0] > 1<<32 {
			in.failf(ErrTrap, "input_load_u64 out of range at %d", stack[0])
		}
		stack[0] = v
	}},
	{"store_u8", []api.ValueType{i64, i32}, nil, func(_ context.Context, in *instance, stack []uint64) {
		if !in.k.storeU8(stack[0], byte(stack[1])) {
			in.failf(ErrTrap, "store_u8 out of range at %d", stack[0])
		}
	}},
	{"store_u64", []api.ValueType{i64, i64}, nil, func(_ context.Context, in *instance, stack []uint64) {
		if !in.k.storeU64(stack[0], stack[1]) {
			in.failf(ErrTrap, "store_u64 out of range at %d", stack[0])
		}
	}},
	{"config_get", []api.ValueType{i64}, []api.ValueType{i64}, func(_ context.Context, in *instance, stack []uint64) {
		key, _ := in.readBlockPrefix(stack[0], 1<<62)
		if in.p.onConfigGet != nil {
			in.p.onConfigGet(string(key))
		}
		v, ok := in.p.m.Config[string(key)] // no key copy for the lookup
		if !ok {
			stack[0] = 0
			return
		}
		off := in.k.alloc(uint64(len(v)))
		if off == 0 {
			in.failf(ErrMemoryLimit, "the Extism kernel could not allocate %d bytes within the memory cap of %s", len(v), pagesSize(uint64(in.p.memPages)))
		}
		copy(in.k.mem[off:], v)
		stack[0] = off
	}},
	{"var_get", []api.ValueType{i64}, []api.ValueType{i64}, func(_ context.Context, in *instance, stack []uint64) {
		key, _ := in.readBlockPrefix(stack[0], 1<<62)
		v, ok := in.vars[string(key)] // no key copy for the lookup
		in.free(stack[0])
		if !ok {
			stack[0] = 0
			return
		}
		stack[0] = in.writeBlock(v)
	}},
	{"var_set", []api.ValueType{i64, i64}, nil, func(_ context.Context, in *instance, stack []uint64) {
		key := string(in.readBlock(stack[0]))
		in.free(stack[0])
		if old, ok := in.vars[key]; ok {
			in.varBytes -= len(key) + len(old)
			delete(in.vars, key)
		}
		if stack[1] == 0 {
			return
		}
		v := in.readBlock(stack[1])
		in.free(stack[1])
		if in.varBytes+len(key)+len(v) > maxVarBytes {
			in.failf(ErrHostFunction, "var_set %q: the variable store is full (%d bytes max per instance)", key, maxVarBytes)
		}
		if in.vars == nil {
			in.vars = map[string][]byte{}
		}
		in.vars[key] = v
		in.varBytes += len(key) + len(v)
	}},
	{"http_request", []api.ValueType{i64, i64}, []api.ValueType{i64}, httpRequest},
	{"http_status_code", nil, []api.ValueType{i32}, func(_ context.Context, in *instance, stack []uint64) {
		stack[0] = api.EncodeI32(in.httpStatus)
	}},
	{"http_headers", nil, []api.ValueType{i64}, func(_ context.Context, in *instance, stack []uint64) {
		if in.httpHeaders == nil {
			stack[0] = 0
			return
		}
		b, _ := json.Marshal(in.httpHeaders)
		stack[0] = in.writeBlock(b)
	}},
	{"get_log_level", nil, []api.ValueType{i32}, func(_ context.Context, in *instance, stack []uint64) {
		stack[0] = api.EncodeI32(extismLevel(in.p.logger.GetLevel()))
	}},
	logFn("log_trace", hclog.Trace),
	logFn("log_debug", hclog.Debug),
	logFn("log_info", hclog.Info),
	logFn("log_warn", hclog.Warn),
	logFn("log_error", hclog.Error),
}

// maxVarBytes bounds an instance's Extism variable store (the go-sdk's
// default, 1 MiB).
const maxVarBytes = 1 << 20

func logFn(name string, level hclog.Level) hostFn {
	return hostFn{name, []api.ValueType{i64}, nil, func(ctx context.Context, in *instance, stack []uint64) {
		msg, total := in.readBlockPrefix(stack[0], maxLogLine)
		in.p.glog.emitN(level, "log", msg, total)
		in.free(stack[0])
	}}
}

// hostModule returns the builder of envModule, the kernel's functions as
// wazero host functions of rt.
func hostModule(rt wazero.Runtime) wazero.HostModuleBuilder {
	b := rt.NewHostModuleBuilder(envModule)
	for _, f := range envFuncs {
		fn := f.fn
		b.NewFunctionBuilder().WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) {
			fn(ctx, instFrom(ctx), stack)
		}), f.params, f.results).Export(f.name)
	}
	return b
}

// httpRequest implements http_request(request JSON block, body block) ->
// response body block (0 when empty), with the status for
// http_status_code. See http.go for the policy.
func httpRequest(ctx context.Context, in *instance, stack []uint64) {
	in.httpStatus = 0
	in.httpHeaders = nil
	if in.httpCount++; in.httpCount > in.p.maxHTTPRequests {
		in.failf(ErrHTTPLimit, "http_request number %d of this call: over max_http_requests (%d per call); raise it in %s if the tool legitimately needs more", in.httpCount, in.p.maxHTTPRequests, in.p.table)
	}
	reqJSON := in.readBlock(stack[0])
	in.free(stack[0])
	var req struct {
		URL     string            `json:"url"`
		Method  string            `json:"method"`
		Headers map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(reqJSON, &req); err != nil {
		in.failf(ErrHostFunction, "http_request: invalid request JSON: %v", err)
	}
	var body io.Reader
	if stack[1] != 0 {
		b := in.readBlock(stack[1])
		in.free(stack[1])
		body = bytes.NewReader(b)
	}
	if in.p.http == nil {
		in.fail(&deniedError{fmt.Sprintf("http_request to %q: this plugin has no allowed_hosts (no network access)", req.URL)})
	}
	if req.Method == "" {
		req.Method = "GET"
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		in.failf(ErrHostFunction, "http_request: invalid url %q: %v", req.URL, err)
	}
	if err := in.p.httpPolicy.checkURL(u); err != nil {
		in.fail(err)
	}
	hreq, err := http.NewRequestWithContext(in.callCtx, strings.ToUpper(req.Method), u.String(), body)
	if err != nil {
		in.failf(ErrHostFunction, "http_request: %v", err)
	}
	for k, v := range req.Headers {
		hreq.Header.Set(k, v)
	}
	resp, err := in.p.http.Do(hreq)
	if err != nil {
		if d, ok := asDenied(err); ok {
			in.fail(d)
		}
		in.failf(ErrHostFunction, "http_request %s %s: %v", hreq.Method, u.Redacted(), err)
	}
	defer resp.Body.Close()
	left := in.p.maxHTTPBytes - in.httpBytes
	limit := min(in.p.maxHTTP, left)
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		in.failf(ErrHostFunction, "http_request %s %s: reading body: %v", hreq.Method, u.Redacted(), err)
	}
	if int64(len(b)) > limit {
		if limit == left {
			in.failf(ErrHTTPLimit, "http_request %s %s: the call's response bodies exceed max_http_bytes (%d bytes per call); raise it in %s if the tool legitimately needs more", hreq.Method, u.Redacted(), in.p.maxHTTPBytes, in.p.table)
		}
		in.failf(ErrHostFunction, "http_request %s %s: response body exceeds %d bytes (a quarter of the memory cap); raise memory", hreq.Method, u.Redacted(), limit)
	}
	in.httpBytes += int64(len(b))
	in.httpStatus = int32(resp.StatusCode)
	in.httpHeaders = make(map[string]string, len(resp.Header))
	for k, v := range resp.Header {
		in.httpHeaders[strings.ToLower(k)] = strings.Join(v, ",")
	}
	if len(b) == 0 {
		stack[0] = 0
		return
	}
	stack[0] = in.writeBlock(b)
}
