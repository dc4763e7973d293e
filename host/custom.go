package host

// Backends of the embedder's own: Host.Add and Host.Remove.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/transport"
)

// KindCustom is the Kind, in Status, of a backend added with Host.Add.
const KindCustom = "custom"

// custom is what Host.Add was given, to build the backend again (Enable).
type custom struct {
	newTr       func() transport.Transport
	opts        BackendOptions
	allow, deny []config.Rule // opts.Tools and DenyTools, compiled
}

// BackendOptions configures a backend added with Host.Add. Nil and the zero
// value are valid.
type BackendOptions struct {
	// Prefix is put before each of the backend's tool names to make its
	// catalogue name. Nil: the backend's name and "__"; "" is no prefix.
	Prefix *string

	// Timeout bounds each call. Default: [host] call_timeout (30s).
	Timeout time.Duration

	// MaxOutput caps a result's JSON encoding, in bytes; the host checks
	// it. Default: DefaultMaxOutput.
	MaxOutput int

	// Tools and DenyTools are the backend's tools and deny_tools: globs of
	// its own tool names that are listed (default all) and left out.
	Tools, DenyTools []string

	// Supervision is as a [servers.NAME] table's keys (start,
	// startup_timeout, health_*, restart_backoff, max_restarts,
	// restart_window, circuit_breaker; not idle_timeout); zero fields get
	// their documented defaults. With health_check = "ping" (the default)
	// the transport's Ping is called every health_interval.
	Supervision config.Supervision
}

// Add adds a backend of the embedder's own: newTransport returns a fresh,
// unconnected transport.Transport (it is called once per attempt to start,
// so a restart gets a new one; the Transport contract, which the
// transport/transporttest suite checks, applies). The backend is supervised,
// policed, audited and listed like a configured one; Status shows it with
// Kind KindCustom. Add waits, within ctx, as New does for an eager backend,
// and a backend that fails to start does not fail Add (Status shows it).
//
// name must match ToolNamePattern. Errors: ErrBackendExists (a configured
// or added backend has that name), an invalid name or option (a
// config.ErrorList for Supervision and the tool globs), ErrClosed.
func (h *Host) Add(ctx context.Context, name string, newTransport func() transport.Transport, opts *BackendOptions) error {
	if newTransport == nil {
		return errors.New("host: Add: newTransport is nil")
	}
	if !ToolNamePattern.MatchString(name) {
		return fmt.Errorf("host: Add: backend name %q does not match %s", name, ToolNamePattern)
	}
	c := &custom{newTr: newTransport}
	if opts != nil {
		c.opts = *opts
	}
	// The supervision defaults and checks, and the tool globs, are those
	// of a [servers.NAME] table.
	allow, deny, err := config.CheckBackend(name, &c.opts.Supervision, c.opts.Prefix, c.opts.Tools, c.opts.DenyTools)
	if err != nil {
		return fmt.Errorf("host: Add %q: %w", name, err)
	}
	c.allow, c.deny = allow, deny

	unlock := h.lockTopology()
	if h.isClosed() {
		unlock()
		return ErrClosed
	}
	old := h.cur.Load()
	if old.byName[name] != nil {
		unlock()
		return fmt.Errorf("%w: %q", ErrBackendExists, name)
	}
	b := h.newCustom(name, c)
	next := old.with(map[string]*backend{name: b})
	next.custom[name] = c
	h.publish(next, false)
	h.launch(b)
	unlock()
	h.awaitFirst(ctx, []*backend{b})
	return nil
}

// newCustom builds (without starting) a backend of Host.Add.
func (h *Host) newCustom(name string, c *custom) *backend {
	o := c.opts
	timeout := h.callTimeout(config.Duration(o.Timeout))
	b := h.newBackend(name, KindCustom, prefixOf(name, o.Prefix), timeout, o.Supervision)
	b.timeoutFrom = h.timeoutFrom(config.Duration(o.Timeout))
	b.allow, b.deny, b.maxOutput = c.allow, c.deny, o.MaxOutput
	if b.maxOutput <= 0 {
		b.maxOutput = DefaultMaxOutput
	}
	b.newTr = func(func(transport.ListKind)) transport.Transport { return c.newTr() }
	return b
}

// Remove stops a backend added with Host.Add and forgets it: its tools
// leave the catalogue, and calls to them fail with ErrBackendUnavailable and
// ErrBackendRemoved. It returns once the backend's goroutines are gone and
// its transport is closed. A configured backend is removed by Host.Apply
// with a configuration without it (or stopped by Host.Disable). Errors:
// ErrUnknownBackend, ErrClosed.
func (h *Host) Remove(ctx context.Context, name string) error {
	defer h.lockTopology()()
	if h.isClosed() {
		return ErrClosed
	}
	old := h.cur.Load()
	b := old.byName[name]
	if b == nil || old.custom[name] == nil {
		if b != nil {
			return fmt.Errorf("%w: %q is configured, not added with Host.Add: apply a configuration without it (Host.Apply), or Host.Disable it", ErrUnknownBackend, name)
		}
		return unknownBackend(name)
	}
	next := old.with(map[string]*backend{name: nil})
	delete(next.custom, name)
	delete(next.disabled, name)
	h.publish(next, false)
	h.retire([]*backend{b}, func(*backend) error {
		return fmt.Errorf("%w: by Host.Remove", ErrBackendRemoved)
	})
	return nil
}
