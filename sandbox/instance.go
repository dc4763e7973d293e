package sandbox

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
	"github.com/toolhost/toolhost/transport"
)

// instance is one instantiation of the module with its Go Extism kernel.
// It runs one call at a time; all its fields are used by that call's
// goroutine only.
type instance struct {
	p      *Plugin
	stdout *lineWriter
	stderr *lineWriter

	// mod is the guest module (anonymous, in the plugin's runtime) and fns
	// its exports, looked up once each.
	mod api.Module
	fns map[string]api.Function
	k   *kernel

	lim     *instLimits
	export  string // the export being called
	tooBig  int64  // size of an output or call_tool error over max_output
	callCtx context.Context
	fault   error
	errMsg  string
	broken  bool

	vars        map[string][]byte
	varBytes    int
	httpStatus  int32
	httpHeaders map[string]string
	httpCount   int        // http_requests of the current call
	httpBytes   int64      // response body bytes of the current call
	tools       toolsState // inner tool calls of the current call (hosttools.go)
}

func (p *Plugin) newInstance(ctx context.Context) (*instance, error) {
	in := &instance{p: p}
	in.stdout = &lineWriter{log: p.glog, stream: "stdout", level: hclog.Info}
	in.stderr = &lineWriter{log: p.glog, stream: "stderr", level: hclog.Info, keep: true}
	mc := wazero.NewModuleConfig().
		WithStdout(in.stdout).
		WithStderr(in.stderr).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(in.sleep).
		WithRandSource(crand.Reader)
	in.lim = &instLimits{maxFiles: p.maxFiles}
	if len(p.mounts) > 0 {
		mc = mc.WithFSConfig(fsConfig(p.mounts, in.lim))
	}
	compiled, err := p.compiledPlugin(ctx)
	if err != nil {
		return nil, err
	}
	ictx := ctx
	if !p.probe {
		ictx = withReservedMemory(ctx)
	}
	// Anonymous (a module's name section would otherwise name it, and a
	// name can be instantiated only once per runtime); no start function:
	// initialize runs the guest runtime's own initialisation.
	mod, err := compiled.rt.InstantiateModule(ictx, compiled.mod, mc.WithName("").WithStartFunctions())
	if err != nil {
		if ctx.Err() != nil {
			return nil, p.ctxError(ctx, nil, "instantiate")
		}
		return nil, p.errorf("instantiating: %v: %w", err, transport.ErrInitialize)
	}
	in.mod = mod
	in.k = newKernel(uint64(p.memPages) * PageSize)
	in.fns = make(map[string]api.Function, 4)
	if err := in.initialize(ctx); err != nil {
		in.close()
		return nil, err
	}
	return in, nil
}

// initialize runs the guest runtime's initialisation once, as the Extism
// go-sdk does before an instance's first call (its runtime.go): a WASI reactor's
// _initialize, then hs_init(0, 0) for a Haskell module, or a command's
// __wasm_call_ctors when there is no _initialize.
func (in *instance) initialize(ctx context.Context) error {
	var steps [][]uint64
	var names []string
	if in.mod.ExportedFunction("_initialize") != nil {
		names, steps = append(names, "_initialize"), append(steps, nil)
	} else if in.mod.ExportedFunction("__wasm_call_ctors") != nil && in.mod.ExportedFunction("hs_init") == nil {
		names, steps = append(names, "__wasm_call_ctors"), append(steps, nil)
	}
	if in.mod.ExportedFunction("hs_init") != nil {
		names, steps = append(names, "hs_init"), append(steps, []uint64{0, 0})
	}
	for i, name := range names {
		in.k.reset()
		in.callCtx = ctx
		_, err := in.enter(ctx, name, steps[i])
		in.callCtx = nil
		if err != nil {
			return in.classify(ctx, nil, name, err)
		}
	}
	return nil
}

// enter calls export name of the guest: the one Go→Wasm entry of a call.
// Its deadline is enforced by wazero's close-on-context-done (the runtime
// is built with it), which watches ctx for the length of the entry.
func (in *instance) enter(ctx context.Context, name string, params []uint64) (uint64, error) {
	f := in.fns[name]
	if f == nil {
		f = in.mod.ExportedFunction(name)
		if f == nil {
			return 0, fmt.Errorf("unknown function: %s", name)
		}
		if n := len(f.Definition().ResultTypes()); n > 1 {
			return 0, fmt.Errorf("function %s has %d results, expected 0 or 1", name, n)
		}
		in.fns[name] = f
	}
	var st [2]uint64
	copy(st[:], params)
	cc := &callCtx{Context: ctx, in: in}
	err := f.CallWithStack(cc, st[:])
	rc := st[0]
	if len(f.Definition().ResultTypes()) == 0 {
		rc = 0
	}
	// A guest that exits (WASI proc_exit) ends the call: exit code 0 is a
	// success, as in the go-sdk.
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		rc = uint64(exit.ExitCode())
		if exit.ExitCode() == 0 && ctx.Err() == nil {
			err = nil
		}
	}
	return rc, err
}

// sleep is the guest's nanosleep (WASI poll_oneoff on a clock): a real
// sleep, cut short when the call's context is done so a sleeping guest does
// not outlive its deadline.
func (in *instance) sleep(ns int64) {
	if ns <= 0 || in.callCtx == nil {
		return
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-in.callCtx.Done():
	}
}

func (in *instance) close() {
	if in.mod != nil {
		_ = in.mod.Close(bgCtx)
	}
	if in.k != nil {
		in.k.release()
	}
}

// call runs export fn with input on the instance and classifies the
// outcome. ctx carries the call's deadline; parent is the caller's context.
// The output is a view of the instance's kernel memory, valid until the
// instance's next call: use it before releasing the instance.
func (in *instance) call(ctx, parent context.Context, fn string, input []byte) ([]byte, error) {
	p := in.p
	in.callCtx = ctx
	in.fault, in.errMsg = nil, ""
	in.stderr.reset()
	in.lim.take()
	in.export, in.tooBig, in.httpCount, in.httpBytes = fn, 0, 0, 0
	in.tools = toolsState{}
	var rc uint64
	var err error
	if in.mod.IsClosed() {
		err = errors.New("module is closed")
	} else if !in.k.setInput(input) {
		// maxInput is half the cap: only a kernel memory that cannot be
		// reserved gets here.
		in.broken = true
		in.callCtx = nil
		return nil, p.errorf("%s: request of %d bytes does not fit in the Extism kernel memory (cap %s): %w", fn, len(input), pagesSize(uint64(p.memPages)), ErrMemoryLimit)
	} else {
		rc, err = in.enter(ctx, fn, nil)
		// A guest that exited (proc_exit) closed its module: even a
		// successful call leaves the instance unusable.
		in.broken = in.broken || in.mod.IsClosed()
	}
	in.callCtx = nil
	if in.tooBig > 0 && ctx.Err() == nil && in.fault == nil {
		return nil, p.errorf("%s: result of %d bytes exceeds max_output (%d bytes): %w; raise max_output for %s or ask for less", fn, in.tooBig, p.maxOutput, transport.ErrOutputTooLarge, p.table)
	}
	if lerr := in.lim.take(); lerr != nil && ctx.Err() == nil {
		in.broken = true
		return nil, p.errorf("%s: %w; the instance was discarded; raise the limit in %s if the tool legitimately needs more", fn, lerr, p.table)
	}
	if err != nil {
		return nil, in.classify(ctx, parent, fn, err)
	}
	if in.errMsg != "" {
		return nil, &guestError{plugin: p.name, export: fn, msg: in.errMsg, rc: int32(rc)}
	}
	if rc != 0 {
		return nil, p.errorf("%s returned %d without setting an error (error_set): %w", fn, int32(rc), ErrGuest)
	}
	out, _ := in.k.bytes(in.k.out, in.k.outLen)
	if int64(len(out)) > p.maxOutput {
		return nil, p.errorf("%s: result of %d bytes exceeds max_output (%d bytes): %w; raise max_output for %s or ask for less", fn, len(out), p.maxOutput, transport.ErrOutputTooLarge, p.table)
	}
	return out, nil
}

// classify maps the error of a guest entry that failed to the call's error
// and marks the instance broken.
func (in *instance) classify(ctx, parent context.Context, fn string, err error) error {
	p := in.p
	in.broken = true
	switch {
	case ctx.Err() != nil:
		return p.ctxError(ctx, parent, fn)
	case in.fault != nil:
		return p.errorf("%s: %w", fn, in.fault)
	}
	if p.isClosed() {
		return p.errorf("%s: %w", fn, transport.ErrClosed)
	}
	tail := in.stderr.lines()
	if outOfMemory(tail) {
		return p.errorf("%s: the guest ran out of memory under its cap of %d pages (%s) (%s); raise memory if the tool legitimately needs more: %w",
			fn, p.memPages, pagesSize(uint64(p.memPages)), firstNonEmpty(panicLine(tail), err.Error()), ErrMemoryLimit)
	}
	msg := panicLine(tail)
	if msg == "" {
		msg = firstLine(err.Error())
	}
	return p.errorf("%s: %s: %w; the instance was discarded", fn, msg, ErrTrap)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// guestError is a failure the guest reported with error_set.
type guestError struct {
	plugin, export, msg string
	rc                  int32
}

func (e *guestError) Error() string {
	return fmt.Sprintf("sandbox: plugin %q: %s failed: %s", e.plugin, e.export, e.msg)
}
func (e *guestError) Unwrap() error { return ErrGuest }
