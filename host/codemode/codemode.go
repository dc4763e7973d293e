// Package codemode runs code mode's run_code (issue 27, items 3 and 4): a
// JavaScript program, run by the jsrun plugin (plugins/jsrun) in the Wasm
// sandbox, whose inner tool calls go back through the host's pipeline under
// the calling client's view, so that policy, validation, grants, rate
// limits and audit apply to each.
//
// A Runner owns one sandbox plugin (its own Engine on the host's
// compilation cache) with no hosts and no paths, granted the host-tools
// module (sandbox.HostTools) with the run's bounds. Run passes the
// caller's view through the context: the plugin is shared by every
// profile, the view is per run.
package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/transport"
)

// ToolName is the name of code mode's tool in a gateway's tools/list.
const ToolName = "run_code"

// Caller makes a run's inner calls: the calling client's view of the
// catalogue (a host.Catalogue: *host.Host or *host.View).
type Caller interface {
	CallTool(ctx context.Context, name string, args any) (*mcp.CallToolResult, error)
}

// SearchFunc is the tool search a run's searchTools uses: at most limit
// tools matching query (limit 0: the searcher's default) among those the
// caller may call. Nil: searchTools is undefined in the program.
type SearchFunc func(ctx context.Context, query string, limit int) ([]*mcp.Tool, error)

// Errors of Run, besides the sandbox's (each wrapped with the limit it
// hit): sandbox.ErrMemoryLimit (the program outgrew [code_mode] memory),
// transport.ErrTimeout (the run outlasted [code_mode] timeout or the
// caller's deadline), sandbox.ErrTrap (the engine crashed).
var (
	// ErrNotReady: the plugin could not be loaded (its Connect failed);
	// the message says why.
	ErrNotReady = errors.New("code mode is not available")
	// ErrBadCode: the request has no code string.
	ErrBadCode = errors.New("run_code needs a code string")
)

// Options configures a Runner.
type Options struct {
	// Config is [code_mode] (its Plugin resolved by config.Load).
	Config config.CodeMode
	// CacheDir is the Wasm compilation cache ([host] cache_dir; "": the
	// sandbox's default).
	CacheDir string
	// Logger receives the plugin's logs (nil: none).
	Logger hclog.Logger
}

// Runner runs programs. It is safe for concurrent use; at most
// [code_mode] instances runs run at once (more wait, within their
// deadline).
type Runner struct {
	cfg    config.CodeMode
	eng    *sandbox.Engine
	plugin *sandbox.Plugin

	ready   chan struct{} // closed when Connect has ended
	connErr error         // Connect's error, set before ready is closed
	cancel  context.CancelFunc
	once    sync.Once
}

// runKey carries a run's state to the inner calls (sandbox.HostTools gets
// the plugin call's context).
type runKey struct{}

type runState struct {
	caller Caller
	search SearchFunc
	parent string // the run's correlation id
}

// New builds a Runner and starts loading the plugin in the background (a
// first, cold compilation of the ≈20 MB module takes seconds; later ones
// come from the on-disk cache): Run waits for it within its deadline. Close
// it.
func New(opts *Options) (*Runner, error) {
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	cfg := opts.Config
	if cfg.Plugin == "" {
		return nil, fmt.Errorf("%w: no [code_mode] plugin path", ErrNotReady)
	}
	eng, err := sandbox.NewEngine(&sandbox.EngineOptions{CacheDir: opts.CacheDir, Logger: logger})
	if err != nil {
		return nil, err
	}
	r := &Runner{cfg: cfg, eng: eng, ready: make(chan struct{})}
	m := &sandbox.Manifest{
		Name:         "code_mode",
		Path:         cfg.Plugin,
		Capabilities: sandbox.Capabilities{Memory: cfg.MemoryBytes()}, // no hosts, no paths
		Instances:    cfg.Instances,
		Timeout:      cfg.TimeoutDuration(),
		Config: map[string]string{
			"max_calls": strconv.Itoa(cfg.Calls()),
		},
	}
	r.plugin = eng.Plugin(m, &sandbox.PluginOptions{Logger: logger, ConfigTable: "[code_mode]", Tools: &sandbox.HostTools{
		Call:           innerCall,
		Search:         innerSearch,
		MaxCalls:       cfg.Calls(),
		MaxResultBytes: cfg.ResultBytes(),
		MaxArgBytes:    cfg.ArgBytes(),
	}})
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.ready)
		// A cold compile under load can take minutes: bounded by Close.
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Minute)
		defer ccancel()
		if _, err := r.plugin.Connect(cctx); err != nil {
			r.connErr = fmt.Errorf("%w: loading %s: %w", ErrNotReady, cfg.Plugin, err)
			logger.Error("code mode's plugin could not be loaded; run_code fails until it can", "path", cfg.Plugin, "error", err)
		}
	}()
	return r, nil
}

// Close stops loading the plugin, closes it and its Engine, and waits for
// the background load to end. Runs in flight fail. Idempotent.
func (r *Runner) Close() error {
	r.once.Do(func() {
		r.cancel()
		<-r.ready
		_ = r.plugin.Close()
		_ = r.eng.Close()
	})
	return nil
}

// Ready waits until the plugin is loaded, or ctx is done, and returns
// Connect's error (ErrNotReady) or ctx's.
func (r *Runner) Ready(ctx context.Context) error {
	select {
	case <-r.ready:
		return r.connErr
	case <-ctx.Done():
		return fmt.Errorf("%w: the plugin is still loading: %w", ErrNotReady, ctx.Err())
	}
}

// Run runs code (the body of an async function) with caller making its
// inner calls and search its searchTools (nil: none), under ctx's deadline
// or [code_mode] timeout, whichever is sooner. The result is jsrun's: the
// console lines and the returned value as text, structuredContent
// {result, logs}, or an isError result with the program's uncaught error
// and its stack (a refused inner call the program did not catch; max_calls,
// max_result, max_args; a call stack deeper than its limit, a RangeError).
// The error is for a run the sandbox ended: over its memory
// (sandbox.ErrMemoryLimit), past its deadline (transport.ErrTimeout),
// cancelled, or a crash of the engine (sandbox.ErrTrap); the plugin pool
// replaces the instance, so the next run is unaffected.
//
// The inner calls' audit records name the run: their Parent is ctx's
// correlation id (host.WithCorrelationID), when it has one.
func (r *Runner) Run(ctx context.Context, caller Caller, search SearchFunc, code string) (*mcp.CallToolResult, error) {
	timeout := r.cfg.TimeoutDuration()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := r.Ready(ctx); err != nil {
		return nil, err
	}
	ctx = context.WithValue(ctx, runKey{}, &runState{caller: caller, search: search, parent: host.CorrelationID(ctx)})
	args := map[string]any{"code": code}
	if search != nil {
		args["search"] = true
	}
	res, err := r.plugin.CallTool(ctx, &mcp.CallToolParams{Name: ToolName, Arguments: args})
	if err == nil {
		return res, nil
	}
	switch {
	case errors.Is(err, sandbox.ErrMemoryLimit):
		return nil, fmt.Errorf("run_code: the program exceeded its memory (code_mode.memory, %s): %w", config.Size(r.cfg.MemoryBytes()), err)
	case errors.Is(err, transport.ErrTimeout) && ctx.Err() != nil:
		return nil, fmt.Errorf("run_code: the program did not finish within its deadline (code_mode.timeout, %s, or the caller's): %w", timeout, err)
	case errors.Is(err, context.Canceled):
		return nil, fmt.Errorf("run_code: cancelled by the caller: %w", err)
	}
	return nil, fmt.Errorf("run_code: %w", err)
}

// Args decodes run_code's arguments ({"code": string}).
func Args(raw json.RawMessage) (string, error) {
	var in struct {
		Code *string `json:"code"`
	}
	if err := json.Unmarshal(raw, &in); err != nil || in.Code == nil {
		return "", ErrBadCode
	}
	return *in.Code, nil
}

// innerCall is sandbox.HostTools.Call: one inner call through the run's
// caller (the host pipeline under the client's view), its audit record
// naming the run as Parent.
func innerCall(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	st, ok := ctx.Value(runKey{}).(*runState)
	if !ok || st.caller == nil {
		return nil, errors.New("no caller for this run")
	}
	ctx = host.WithParent(host.WithCorrelationID(ctx, ""), st.parent)
	return st.caller.CallTool(ctx, name, args)
}

func innerSearch(ctx context.Context, query string, limit int) ([]*mcp.Tool, error) {
	st, ok := ctx.Value(runKey{}).(*runState)
	if !ok || st.search == nil {
		return nil, &sandbox.HostToolsError{Code: sandbox.HostToolsNoSearch, Message: "searchTools is not available: the profile's catalogue is not \"search\""}
	}
	return st.search(ctx, query, limit)
}
