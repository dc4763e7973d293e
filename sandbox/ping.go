package sandbox

import (
	"context"

	"github.com/toolhost/toolhost/transport"
)

// Ping implements transport.Transport: it checks that the plugin is loaded
// and that an instance can be had for a call within ctx (from the pool, or a
// new one when the pool is empty or isolation is "fresh"), without running
// guest code. Errors: transport.ErrNotConnected, transport.ErrClosed, the
// instantiation error (such as ErrMemoryLimit) or ctx's.
func (p *Plugin) Ping(ctx context.Context) error {
	p.mu.Lock()
	switch p.state {
	case stateReady:
	case stateClosed:
		p.mu.Unlock()
		return p.errorf("ping: %w", transport.ErrClosed)
	default:
		p.mu.Unlock()
		return p.errorf("ping: %w", transport.ErrNotConnected)
	}
	p.ops.Add(1)
	p.mu.Unlock()
	defer p.ops.Done()
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if err := p.wait(ctx, ctx, "ping"); err != nil {
		return err
	}
	in, err := p.acquire(ctx, ctx, "ping")
	if err != nil {
		return err
	}
	p.release(in)
	return nil
}
