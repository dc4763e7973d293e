package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	extism "github.com/extism/go-sdk"
	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero/api"
)

// The Extism kernel imports, as sandbox provides them.
//
// The go-sdk instantiates its own "extism:host/env" module in every runtime
// and refuses a host module of the same name, so its http_request (which
// checks only the first URL against AllowedHosts and follows redirects with
// http.DefaultClient) cannot be overridden by a HostFunction. Instead,
// Connect renames the module of the guest's "extism:host/env" function
// imports to envModule (wasmfile.RewriteImports) and supplies every function of
// the SDK's env module under that name with the same signatures and wire
// behaviour:
//
//   - kernel operations (alloc, free, length, input_*, output_*, error_*,
//     reset, memory_bytes) are forwarded to the instance's Extism kernel
//     module with api.Functions looked up once per instance (the SDK looks
//     each one up by name on every operation, which dominates a warm call);
//   - load_*/store_*/input_load_* read and write the kernel memory directly;
//   - config_get, var_get/var_set, http_request, http_status_code,
//     http_headers, get_log_level and log_* are implemented here, with
//     sandbox's policies (see http.go, guestlog.go).
//
// A host function that must fail the call records the error in
// instance.fault and panics; wazero turns the panic into the guest call's
// error and Plugin maps instance.fault to the returned error.
const envModule = "toolhost:extism/env"

type instKey struct{}

// Kernel functions, indexes into instance.kfn.
const (
	kAlloc = iota
	kFree
	kLength
	kLengthUnsafe
	kInputSet
	kInputLength
	kInputOffset
	kOutputSet
	kOutputLength
	kOutputOffset
	kReset
	kErrorSet
	kErrorGet
	kMemoryBytes
	kCount
)

var kernelNames = [kCount]string{
	kAlloc: "alloc", kFree: "free", kLength: "length", kLengthUnsafe: "length_unsafe",
	kInputSet: "input_set", kInputLength: "input_length", kInputOffset: "input_offset",
	kOutputSet: "output_set", kOutputLength: "output_length", kOutputOffset: "output_offset",
	kReset: "reset", kErrorSet: "error_set", kErrorGet: "error_get", kMemoryBytes: "memory_bytes",
}

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

func instFrom(ctx context.Context) *instance {
	in, ok := ctx.Value(instKey{}).(*instance)
	if !ok {
		panic("sandbox: host function called outside a sandbox call")
	}
	return in
}

// bind resolves the instance's kernel module and functions on the first
// kernel operation of its first call.
func (in *instance) bind(ctx context.Context) {
	if in.kernel != nil {
		return
	}
	k, ok := ctx.Value(extism.PluginCtxKey("extism")).(api.Module)
	if !ok {
		in.failf(ErrTrap, "Extism kernel module not found in call context (go-sdk changed?)")
	}
	for i, name := range kernelNames {
		f := k.ExportedFunction(name)
		if f == nil {
			in.failf(ErrTrap, "Extism kernel lacks %q", name)
		}
		in.kfn[i] = f
	}
	in.kernel = k
	in.kmem = k.ExportedMemory("memory")
}

// fail records err as the call's fault and aborts the guest.
func (in *instance) fail(err error) {
	in.fault = err
	panic(err)
}

func (in *instance) failf(kind error, format string, args ...any) {
	in.fail(fmt.Errorf("%w: %s", kind, fmt.Sprintf(format, args...)))
}

// kcall calls kernel function i. The context carries no deadline: kernel
// operations are short and bounded, and the guest call around them is
// already bounded by close-on-context-done.
func (in *instance) kcall(ctx context.Context, i int, stack []uint64) {
	in.bind(ctx)
	if err := in.kfn[i].CallWithStack(bgCtx, stack); err != nil {
		in.failf(ErrTrap, "kernel %s: %v", kernelNames[i], err)
	}
}

func (in *instance) kcall1(ctx context.Context, i int, arg uint64) uint64 {
	var st [1]uint64
	st[0] = arg
	in.kcall(ctx, i, st[:])
	return st[0]
}

// readBlock copies the kernel memory block at off.
func (in *instance) readBlock(ctx context.Context, off uint64) []byte {
	n := in.kcall1(ctx, kLength, off)
	b, ok := in.kmem.Read(uint32(off), uint32(n))
	if !ok || off > 1<<32 {
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

// readBlockPrefix copies at most max bytes of the kernel memory block at
// off and returns them with the block's full length.
func (in *instance) readBlockPrefix(ctx context.Context, off uint64, max int64) ([]byte, int64) {
	n := in.kcall1(ctx, kLength, off)
	m := min(n, uint64(max))
	b, ok := in.kmem.Read(uint32(off), uint32(m))
	if !ok || off > 1<<32 {
		in.failf(ErrTrap, "invalid memory block at offset %d", off)
	}
	return bytes.Clone(b), int64(n)
}

func (in *instance) free(ctx context.Context, off uint64) {
	if off != 0 {
		in.kcall(ctx, kFree, []uint64{off})
	}
}

// writeBlock allocates a kernel block holding b and returns its offset.
func (in *instance) writeBlock(ctx context.Context, b []byte) uint64 {
	off := in.kcall1(ctx, kAlloc, uint64(len(b)))
	if off == 0 && len(b) > 0 {
		in.failf(ErrMemoryLimit, "the Extism kernel could not allocate %d bytes within the memory cap", len(b))
	}
	if !in.kmem.Write(uint32(off), b) {
		in.failf(ErrTrap, "kernel block at %d out of range", off)
	}
	return off
}

func (in *instance) inputOffset(ctx context.Context) uint64 {
	if !in.inputOffOK {
		off, _ := ctx.Value(extism.InputOffsetKey("inputOffset")).(uint64)
		in.inputOff, in.inputOffOK = off, true
	}
	return in.inputOff
}

type hostFn struct {
	name    string
	params  []api.ValueType
	results []api.ValueType
	fn      func(ctx context.Context, in *instance, stack []uint64)
}

func forward(name string, k int, params, results []api.ValueType) hostFn {
	return hostFn{name, params, results, func(ctx context.Context, in *instance, stack []uint64) {
		in.kcall(ctx, k, stack)
	}}
}

var envFuncs = []hostFn{
	forward("alloc", kAlloc, []api.ValueType{i64}, []api.ValueType{i64}),
	forward("free", kFree, []api.ValueType{i64}, nil),
	forward("length", kLength, []api.ValueType{i64}, []api.ValueType{i64}),
	forward("length_unsafe", kLengthUnsafe, []api.ValueType{i64}, []api.ValueType{i64}),
	forward("input_set", kInputSet, []api.ValueType{i64, i64}, nil),
	forward("input_length", kInputLength, nil, []api.ValueType{i64}),
	forward("input_offset", kInputOffset, nil, []api.ValueType{i64}),
	forward("output_length", kOutputLength, nil, []api.ValueType{i64}),
	forward("output_offset", kOutputOffset, nil, []api.ValueType{i64}),
	forward("reset", kReset, nil, nil),
	forward("error_get", kErrorGet, nil, []api.ValueType{i64}),
	forward("memory_bytes", kMemoryBytes, nil, []api.ValueType{i64}),
	// output_set and error_set are checked before anything is copied: an
	// output over max_output is not handed to the kernel (so the go-sdk
	// copies nothing) and fails the call with ErrOutputTooLarge; an error
	// message is cut to MaxErrorText (call_tool/call: counted against
	// max_output, as it becomes the error result) and the kernel is handed
	// the cut copy.
	{"output_set", []api.ValueType{i64, i64}, nil, func(ctx context.Context, in *instance, stack []uint64) {
		if int64(stack[1]) > in.p.maxOutput {
			in.tooBig = int64(stack[1])
			return
		}
		in.kcall(ctx, kOutputSet, stack)
	}},
	{"error_set", []api.ValueType{i64}, nil, func(ctx context.Context, in *instance, stack []uint64) {
		if stack[0] == 0 {
			in.kcall(ctx, kErrorSet, stack)
			return
		}
		limit := int64(MaxErrorText)
		if in.export == "call_tool" || in.export == "call" {
			limit = in.p.maxOutput
		}
		b, total := in.readBlockPrefix(ctx, stack[0], limit)
		if total <= limit {
			in.errMsg = string(b)
			in.kcall(ctx, kErrorSet, stack)
			return
		}
		if limit == in.p.maxOutput {
			in.tooBig = total
		}
		in.errMsg = cutPrefix(b, total)
		in.kcall(ctx, kErrorSet, []uint64{in.writeBlock(ctx, []byte(in.errMsg))})
	}},
	{"load_u8", []api.ValueType{i64}, []api.ValueType{i32}, func(ctx context.Context, in *instance, stack []uint64) {
		in.bind(ctx)
		v, ok := in.kmem.ReadByte(uint32(stack[0]))
		if !ok || stack[0] > 1<<32 {
			in.failf(ErrTrap, "load_u8 out of range at %d", stack[0])
		}
		stack[0] = uint64(v)
	}},
	{"load_u64", []api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, in *instance, stack []uint64) {
		in.bind(ctx)
		v, ok := in.kmem.ReadUint64Le(uint32(stack[0]))
		if !ok || stack[0] > 1<<32 {
			in.failf(ErrTrap, "load_u64 out of range at %d", stack[0])
		}
		stack[0] = v
	}},
	{"input_load_u8", []api.ValueType{i64}, []api.ValueType{i32}, func(ctx context.Context, in *instance, stack []uint64) {
		in.bind(ctx)
		off := in.inputOffset(ctx) + stack[0]
		v, ok := in.kmem.ReadByte(uint32(off))
		if !ok || off > 1<<32 {
			in.failf(ErrTrap, "input_load_u8 out of range at %d", stack[0])
		}
		stack[0] = uint64(v)
	}},
	{"input_load_u64", []api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, in *instance, stack []uint64) {
		in.bind(ctx)
		off := in.inputOffset(ctx) + stack[0]
		v, ok := in.kmem.ReadUint64Le(uint32(off))
		if !ok || off > 1<<32 {
			in.failf(ErrTrap, "input_load_u64 out of range at %d", stack[0])
		}
		stack[0] = v
	}},
	{"store_u8", []api.ValueType{i64, i32}, nil, func(ctx context.Context, in *instance, stack []uint64) {
		in.bind(ctx)
		if !in.kmem.WriteByte(uint32(stack[0]), byte(stack[1])) || stack[0] > 1<<32 {
			in.failf(ErrTrap, "store_u8 out of range at %d", stack[0])
		}
	}},
	{"store_u64", []api.ValueType{i64, i64}, nil, func(ctx context.Context, in *instance, stack []uint64) {
		in.bind(ctx)
		if !in.kmem.WriteUint64Le(uint32(stack[0]), stack[1]) || stack[0] > 1<<32 {
			in.failf(ErrTrap, "store_u64 out of range at %d", stack[0])
		}
	}},
	{"config_get", []api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, in *instance, stack []uint64) {
		key := string(in.readBlock(ctx, stack[0]))
		if in.p.onConfigGet != nil {
			in.p.onConfigGet(key)
		}
		v, ok := in.p.cfg.Config[key]
		if !ok {
			stack[0] = 0
			return
		}
		stack[0] = in.writeBlock(ctx, []byte(v))
	}},
	{"var_get", []api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, in *instance, stack []uint64) {
		v, ok := in.vars[string(in.readBlock(ctx, stack[0]))] // no key copy for the lookup
		in.free(ctx, stack[0])
		if !ok {
			stack[0] = 0
			return
		}
		stack[0] = in.writeBlock(ctx, v)
	}},
	{"var_set", []api.ValueType{i64, i64}, nil, func(ctx context.Context, in *instance, stack []uint64) {
		key := string(in.readBlock(ctx, stack[0]))
		in.free(ctx, stack[0])
		if old, ok := in.vars[key]; ok {
			in.varBytes -= len(key) + len(old)
			delete(in.vars, key)
		}
		if stack[1] == 0 {
			return
		}
		v := in.readBlock(ctx, stack[1])
		in.free(ctx, stack[1])
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
	{"http_status_code", nil, []api.ValueType{i32}, func(ctx context.Context, in *instance, stack []uint64) {
		stack[0] = api.EncodeI32(in.httpStatus)
	}},
	{"http_headers", nil, []api.ValueType{i64}, func(ctx context.Context, in *instance, stack []uint64) {
		if in.httpHeaders == nil {
			stack[0] = 0
			return
		}
		b, _ := json.Marshal(in.httpHeaders)
		stack[0] = in.writeBlock(ctx, b)
	}},
	{"get_log_level", nil, []api.ValueType{i32}, func(ctx context.Context, in *instance, stack []uint64) {
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
		msg, total := in.readBlockPrefix(ctx, stack[0], maxLogLine)
		in.free(ctx, stack[0])
		in.p.glog.emitN(level, "log", msg, total)
	}}
}

// hostFunctions returns envFuncs as go-sdk host functions in envModule.
func hostFunctions() []extism.HostFunction {
	out := make([]extism.HostFunction, 0, len(envFuncs))
	for _, f := range envFuncs {
		fn := f.fn
		h := extism.NewHostFunctionWithStack(f.name, func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			fn(ctx, instFrom(ctx), stack)
		}, f.params, f.results)
		h.SetNamespace(envModule)
		out = append(out, h)
	}
	return out
}

// httpRequest implements http_request(request JSON block, body block) ->
// response body block (0 when empty), with the status for
// http_status_code. See http.go for the policy.
func httpRequest(ctx context.Context, in *instance, stack []uint64) {
	in.httpStatus = 0
	in.httpHeaders = nil
	if in.httpCount++; in.httpCount > in.p.maxHTTPRequests {
		in.failf(ErrHTTPLimit, "http_request number %d of this call: over max_http_requests (%d per call); raise it in [plugins.%s] if the tool legitimately needs more", in.httpCount, in.p.maxHTTPRequests, in.p.name)
	}
	reqJSON := in.readBlock(ctx, stack[0])
	in.free(ctx, stack[0])
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
		b := in.readBlock(ctx, stack[1])
		in.free(ctx, stack[1])
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
			in.failf(ErrHTTPLimit, "http_request %s %s: the call's response bodies exceed max_http_bytes (%d bytes per call); raise it in [plugins.%s] if the tool legitimately needs more", hreq.Method, u.Redacted(), in.p.maxHTTPBytes, in.p.name)
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
	stack[0] = in.writeBlock(ctx, b)
}
