package sandbox

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// rawWazero is the floor the benchmarks compare the sandbox with: the
// plugin module instantiated directly in wazero (close-on-context-done, so
// with the same deadline enforcement) next to the smallest Go kernel that
// serves its extism:host/env imports (a bump allocator, no bounds beyond
// Go's own, no policy, no logging), and a call that is one cached
// api.Function call under a deadline.
type rawWazero struct {
	rt     wazero.Runtime
	mod    api.Module
	fns    map[string]api.Function
	mem    []byte
	top    uint64
	input  uint64
	inLen  uint64
	outOff uint64
	outLen uint64
}

func newRawWazero(tb testing.TB, cache wazero.CompilationCache, path string) *rawWazero {
	tb.Helper()
	ctx := context.Background()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	r := &rawWazero{mem: make([]byte, 16<<20), fns: map[string]api.Function{}}
	r.rt = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(true))
	tb.Cleanup(func() { r.rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r.rt)
	hb := r.rt.NewHostModuleBuilder("extism:host/env")
	fn := func(name string, params, results []api.ValueType, f func(st []uint64)) {
		hb.NewFunctionBuilder().WithGoFunction(api.GoFunc(func(_ context.Context, st []uint64) { f(st) }), params, results).Export(name)
	}
	I, L := []api.ValueType{i32}, []api.ValueType{i64}
	LL := []api.ValueType{i64, i64}
	fn("input_length", nil, L, func(st []uint64) { st[0] = r.inLen })
	fn("input_load_u8", L, I, func(st []uint64) { st[0] = uint64(r.mem[r.input+st[0]]) })
	fn("input_load_u64", L, L, func(st []uint64) { st[0] = binary.LittleEndian.Uint64(r.mem[r.input+st[0]:]) })
	fn("alloc", L, L, func(st []uint64) { st[0] = r.alloc(st[0]) })
	fn("free", L, nil, func([]uint64) {})
	fn("length", L, L, func(st []uint64) { st[0] = binary.LittleEndian.Uint64(r.mem[st[0]-8:]) })
	fn("length_unsafe", L, L, func(st []uint64) { st[0] = binary.LittleEndian.Uint64(r.mem[st[0]-8:]) })
	fn("load_u8", L, I, func(st []uint64) { st[0] = uint64(r.mem[st[0]]) })
	fn("load_u64", L, L, func(st []uint64) { st[0] = binary.LittleEndian.Uint64(r.mem[st[0]:]) })
	fn("store_u8", []api.ValueType{i64, i32}, nil, func(st []uint64) { r.mem[st[0]] = byte(st[1]) })
	fn("store_u64", LL, nil, func(st []uint64) { binary.LittleEndian.PutUint64(r.mem[st[0]:], st[1]) })
	fn("output_set", LL, nil, func(st []uint64) { r.outOff, r.outLen = st[0], st[1] })
	fn("error_set", L, nil, func([]uint64) {})
	fn("config_get", L, L, func(st []uint64) { st[0] = 0 })
	fn("var_get", L, L, func(st []uint64) { st[0] = 0 })
	fn("var_set", LL, nil, func([]uint64) {})
	fn("http_request", LL, L, func(st []uint64) { st[0] = 0 })
	fn("http_status_code", nil, I, func(st []uint64) { st[0] = 0 })
	fn("http_headers", nil, L, func(st []uint64) { st[0] = 0 })
	fn("get_log_level", nil, I, func(st []uint64) { st[0] = 0x7fffffff })
	for _, n := range []string{"log_trace", "log_debug", "log_info", "log_warn", "log_error"} {
		fn(n, L, nil, func([]uint64) {})
	}
	if _, err := hb.Instantiate(ctx); err != nil {
		tb.Fatal(err)
	}
	cm, err := r.rt.CompileModule(ctx, b)
	if err != nil {
		tb.Fatal(err)
	}
	r.mod, err = r.rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithStartFunctions().
		WithSysWalltime().WithSysNanotime().WithSysNanosleep().WithRandSource(crand.Reader))
	if err != nil {
		tb.Fatal(err)
	}
	if f := r.mod.ExportedFunction("_initialize"); f != nil {
		if _, err := f.Call(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	return r
}

func (r *rawWazero) alloc(n uint64) uint64 {
	off := r.top + 8
	binary.LittleEndian.PutUint64(r.mem[r.top:], n)
	r.top = (off + n + 7) &^ 7
	return off
}

// call runs export fn with input under ctx and returns a view of the output.
func (r *rawWazero) call(ctx context.Context, fn string, input []byte) (uint64, []byte, error) {
	f := r.fns[fn]
	if f == nil {
		f = r.mod.ExportedFunction(fn)
		r.fns[fn] = f
	}
	r.top, r.outLen = 8, 0
	r.input = r.alloc(uint64(len(input)))
	r.inLen = uint64(len(input))
	copy(r.mem[r.input:], input)
	var st [1]uint64
	if err := f.CallWithStack(ctx, st[:]); err != nil {
		return 0, nil, err
	}
	return st[0], r.mem[r.outOff : r.outOff+r.outLen], nil
}
