package sandbox

import (
	"context"
	"errors"

	"github.com/toolhost/toolhost/transport"
)

// invoke runs one guest export with the enforced deadline on a pooled (or
// fresh) instance, and hands its output to use before the instance goes
// back to the pool: out is a view of the instance's kernel memory, valid
// only during use. It returns the call's error, else use's.
func (p *Plugin) invoke(parent context.Context, fn string, input []byte, use func(out []byte) error) error {
	p.mu.Lock()
	switch p.state {
	case stateReady:
	case stateClosed:
		p.mu.Unlock()
		return p.errorf("%s: %w", fn, transport.ErrClosed)
	default:
		p.mu.Unlock()
		return p.errorf("%s: %w", fn, transport.ErrNotConnected)
	}
	p.ops.Add(1)
	p.mu.Unlock()
	defer p.ops.Done()

	if int64(len(input)) > p.maxInput {
		return p.errorf("%s: request of %d bytes exceeds the input limit of %d bytes (half the memory cap of %s; the Extism kernel would silently drop it): %w",
			fn, len(input), p.maxInput, pagesSize(uint64(p.memPages)), ErrInputTooLarge)
	}
	// Waiting for a free instance is bounded by the caller's deadline and
	// by Close (every running call is bounded by its timeout, so the queue
	// drains); the plugin timeout starts once the call has an instance slot.
	if err := p.wait(parent, parent, fn); err != nil {
		return err
	}
	// The caller's deadline, when it has one, is the call's (the host sets
	// one per call); else the plugin timeout, from here.
	var ctx context.Context
	var cancel context.CancelFunc
	if _, ok := parent.Deadline(); ok {
		ctx, cancel = context.WithCancel(parent) // for Close, below
	} else {
		ctx, cancel = context.WithTimeout(parent, p.timeout)
	}
	defer cancel()
	stop := context.AfterFunc(p.closeCtx, cancel)
	defer stop()

	in, err := p.acquire(ctx, parent, fn)
	if err != nil {
		return err
	}
	out, err := in.call(ctx, parent, fn, input)
	if err == nil {
		err = use(out)
	}
	p.release(in)
	return err
}

// wait takes an instance slot (p.sem), waiting at most until ctx is done.
func (p *Plugin) wait(ctx, parent context.Context, fn string) error {
	select {
	case p.sem <- struct{}{}:
		return nil
	default:
	}
	select {
	case p.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
	case <-p.closeCtx.Done():
	}
	switch {
	case p.isClosed():
		return p.errorf("%s: %w", fn, transport.ErrClosed)
	case errors.Is(parent.Err(), context.Canceled):
		return p.errorf("%s: call cancelled by the caller while waiting for a free instance: %w", fn, context.Canceled)
	}
	return p.errorf("%s: all %d instances stayed busy until the caller's deadline: %w: %w; raise instances in %s or the caller's deadline",
		fn, p.size, ErrBusy, context.DeadlineExceeded, p.table)
}

// acquire returns an instance for a call that holds a slot (p.sem); on
// error it gives the slot back.
func (p *Plugin) acquire(ctx, parent context.Context, fn string) (*instance, error) {
	if !p.fresh {
		p.mu.Lock()
		if n := len(p.idle); n > 0 {
			in := p.idle[n-1]
			p.idle = p.idle[:n-1]
			p.mu.Unlock()
			return in, nil
		}
		p.mu.Unlock()
	}
	in, err := p.newInstance(ctx)
	if err != nil {
		<-p.sem
		return nil, err
	}
	return in, nil
}

func (p *Plugin) release(in *instance) {
	keep := !p.fresh && !in.broken
	if keep {
		p.mu.Lock()
		if p.state == stateClosed {
			keep = false
		} else {
			p.idle = append(p.idle, in)
		}
		p.mu.Unlock()
	}
	if !keep {
		in.close()
		if in.broken {
			p.logger.Debug("instance discarded")
		}
	}
	<-p.sem
}
