package sandbox

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/wasmfile"
	"github.com/toolhost/toolhost/transport"
)

// connectCached finishes a Connect whose tools came from the tool-list
// cache: nothing is compiled or instantiated now; wasm (the module file's
// bytes) is kept for the first use, and, unless p.lazy, compiled and warmed
// in the background.
func (p *Plugin) connectCached(wasm []byte, abi ABI, mod *wasmfile.Module, digest string, tools []byte) *mcp.InitializeResult {
	p.mu.Lock()
	p.abi, p.module, p.digest, p.wasm, p.cachedTools = abi, mod, digest, wasm, tools
	if !p.lazy {
		p.ops.Add(1) // Close waits for the warm-up
		go p.warmInBackground()
	}
	p.mu.Unlock()
	p.logger.Debug("plugin ready (tools from the tool-list cache)", "abi", abi, "sha256", digest, "memory_pages", p.memPages, "instances", p.size, "lazy", p.lazy)
	return p.initResult(abi, mod, digest)
}

// warmInBackground compiles the module and, unless a call already holds
// an instance slot (or isolation is "fresh"), warms one pooled instance as
// Connect does (_initialize and the list export). Failures are logged: the
// first call meets them again and reports them. Bounded by Close and by
// warmContext.
func (p *Plugin) warmInBackground() {
	defer p.ops.Done()
	ctx, cancel := warmContext(p.closeCtx, p.timeout)
	defer cancel()
	start := time.Now()
	if _, err := p.compiledPlugin(ctx); err != nil {
		p.logger.Debug("background compile failed", "error", err)
		return
	}
	if p.fresh || p.callID.Load() != 0 {
		return
	}
	select {
	case p.sem <- struct{}{}:
	default:
		return // calls are making their own instances
	}
	defer func() { <-p.sem }()
	in, err := p.newInstance(ctx)
	if err == nil {
		if _, err = p.listOnce(ctx, ctx, in, ""); err != nil {
			in.close()
		}
	}
	if err != nil {
		p.logger.Debug("background warm-up failed", "error", err)
		return
	}
	p.mu.Lock()
	keep := p.state != stateClosed && len(p.idle) < p.size
	if keep {
		p.idle = append(p.idle, in)
	}
	p.mu.Unlock()
	if !keep {
		in.close()
	}
	p.logger.Debug("warmed in the background", "elapsed", time.Since(start))
}

// compiledPlugin returns the compiled module, compiling it first after a
// Connect from the tool-list cache (once: concurrent callers wait for the
// compile in progress, within ctx). Errors: the compile's (ErrABI,
// transport.ErrInitialize), transport.ErrClosed, ctx's.
func (p *Plugin) compiledPlugin(ctx context.Context) (*compiledModule, error) {
	for {
		p.mu.Lock()
		if c := p.compiled; c != nil {
			p.mu.Unlock()
			return c, nil
		}
		if p.state == stateClosed || p.state == stateFailed || p.wasm == nil {
			p.mu.Unlock()
			return nil, p.errorf("%w", transport.ErrClosed)
		}
		if ch := p.compiling; ch != nil {
			p.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, p.ctxError(ctx, nil, "compile")
			}
		}
		ch := make(chan struct{})
		p.compiling = ch
		wasm := p.wasm
		p.mu.Unlock()

		start := time.Now()
		c, err := p.compile(ctx, wasm, p.memPages)
		p.mu.Lock()
		p.compiling = nil
		close(ch)
		if err == nil {
			if p.state == stateClosed || p.state == stateFailed {
				p.mu.Unlock()
				_ = c.Close(bgCtx)
				return nil, p.errorf("%w", transport.ErrClosed)
			}
			p.compiled, p.wasm = c, nil
		}
		p.mu.Unlock()
		if err != nil {
			return nil, err
		}
		p.logger.Debug("compiled at first use", "elapsed", time.Since(start))
		return c, nil
	}
}

// cachedToolList returns the tools of the tool-list cache entry Connect
// used (ok false when Connect listed live). Errors as ListTools'.
func (p *Plugin) cachedToolList() ([]*mcp.Tool, bool, error) {
	p.mu.Lock()
	state, tools := p.state, p.cachedTools
	p.mu.Unlock()
	switch {
	case state == stateClosed:
		return nil, true, p.errorf("%s: %w", p.listExport(), transport.ErrClosed)
	case state != stateReady:
		return nil, true, p.errorf("%s: %w", p.listExport(), transport.ErrNotConnected)
	case tools == nil:
		return nil, false, nil
	}
	list, err := decodeCachedTools(p, tools)
	return list, true, err
}

// storeToolList writes the tools of a complete live listing to the
// tool-list cache, once per Plugin.
func (p *Plugin) storeToolList(tools []*mcp.Tool) {
	if p.cacheKey == "" || !p.stored.CompareAndSwap(false, true) {
		return
	}
	p.e.tools.put(p, p.cacheKey, p.digest, p.abi, tools)
}
