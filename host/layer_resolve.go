package host

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resolveCallLayer finds the backend a tools/call goes to, and sets the
// op's destination. Its catalogue name is looked up in the catalogue; a
// name not there yet may belong to a backend whose tools are not known yet
// (lazy and not started, starting, or restarting after a failed first
// start): it is started and waited for within the call's deadline (from
// request.start, see Host.resolve), and an unknown name is an
// *UnknownToolError suggesting names of the caller's view only. A backend
// that stays unavailable is the error (wrapping ErrBackendUnavailable),
// with the destination's backend set to it for the audit record.
func resolveCallLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		o.dst.view = o.req.view
		h.mu.RLock()
		e, ok := h.tools[o.req.name]
		h.mu.RUnlock()
		if !ok {
			var unavailable error
			// The wait is within the deadline the call will have: that
			// of the backend the name most likely belongs to.
			wctx, cancel := h.waitBound(ctx, o)
			// First the backends whose prefix begins the name (started
			// if lazy, waited for if coming up); only a name none of
			// them lists starts every other lazy backend, so that an
			// unknown tool's suggestions come from the whole catalogue
			// while a known one starts only its owner.
			e, ok, unavailable = h.resolve(wctx, o.req.name)
			if !ok && unavailable == nil {
				h.ensureStarted(wctx)
				e, ok, unavailable = h.resolve(wctx, o.req.name)
			}
			cancel()
			if !ok && unavailable != nil {
				o.dst.backend = unavailable.(*resolveError).backend
				return nil, unavailable
			}
			// The catalogue changed while we waited: so did the view.
			h.mu.RLock()
			o.dst.view = h.views[o.req.profile]
			h.mu.RUnlock()
			if o.dst.view == nil {
				return nil, profileRemoved(o.req.profile)
			}
		}
		if ok && e.lazy != nil {
			// Options.CompileOnDemand: a tool whose schemas do not compile
			// is refused as if it were not listed, as without the option.
			c := e.lazy()
			e.in, e.out, e.lazy, ok = c.in, c.out, nil, c.err == nil
		}
		if !ok {
			return nil, &UnknownToolError{Name: o.req.name, Similar: similar(o.req.name, o.dst.view.names)}
		}
		o.dst.entry, o.dst.b, o.dst.backend, o.dst.target = e, e.b, e.b.name, e.name
		return next(ctx, o)
	}
}

// resolveItemLayer finds the backend of a prompts/get, resources/read or
// completion/complete, and sets the op's destination. A prompt's name is
// found among every ready backend's prompts (allowed or not, so that a
// denied prompt is told apart from an unknown one); a resources/read goes
// to the backend the caller named; a completion goes to its ref's prompt,
// or to the first ready backend listing its URI as a resource or template.
func resolveItemLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		var err error
		switch o.req.method {
		case methodGetPrompt:
			err = h.resolvePrompt(ctx, o)
		case methodReadResource:
			if h.isClosed() {
				return nil, ErrClosed
			}
			b := h.named(o.req.backend)
			if b == nil {
				return nil, fmt.Errorf("%w: no backend %q", ErrBackendUnavailable, o.req.backend)
			}
			o.dst.b, o.dst.backend = b, b.name
		case methodComplete:
			err = h.resolveRef(ctx, o)
		}
		if err != nil {
			return nil, err
		}
		return next(ctx, o)
	}
}

// resolveRef finds the backend of a completion's ref. Errors, named by the
// method: a missing ref or one of another type wraps ErrInvalidArguments,
// an unknown prompt ErrUnknownTool, and a URI no backend lists
// ErrUnknownBackend; ErrClosed.
func (h *Host) resolveRef(ctx context.Context, o *op) error {
	switch ref := o.req.complete.Ref; {
	case ref == nil:
		return fmt.Errorf("%s: %w: no ref", o.req.method, ErrInvalidArguments)
	case ref.Type == refPrompt:
		if err := h.resolvePrompt(ctx, o); err != nil {
			return fmt.Errorf("%s: %w", o.req.method, err)
		}
		return nil
	case ref.Type != refResource:
		return fmt.Errorf("%s: %w: ref type %q (want ref/prompt or ref/resource)", o.req.method, ErrInvalidArguments, ref.Type)
	}
	if h.isClosed() {
		return ErrClosed
	}
	b := h.resourceBackend(ctx, o.req.name)
	if b == nil {
		return fmt.Errorf("%s: %w: no ready backend lists the resource or template %q", o.req.method, ErrUnknownBackend, o.req.name)
	}
	o.dst.b, o.dst.backend = b, b.name
	return nil
}

// resolvePrompt finds the ready backend that offers the prompt o.req.name
// (a catalogue name) and sets the destination: the backend and the
// prompt's own name there. Errors: ErrClosed; a prompt no ready backend
// offers wraps ErrUnknownTool.
func (h *Host) resolvePrompt(ctx context.Context, o *op) error {
	var found *backend
	var target string
	for _, b := range h.readyBackends() {
		ps, err := h.pipe.send(ctx, listOp(methodListPrompts, "", b))
		if err != nil {
			continue
		}
		for _, p := range ps.([]*mcp.Prompt) {
			if catalogueName(b.prefix, p.Name) == o.req.name {
				found, target = b, p.Name
			}
		}
	}
	if h.isClosed() {
		return ErrClosed
	}
	if found == nil {
		return fmt.Errorf("prompt %q: %w", o.req.name, ErrUnknownTool)
	}
	// (Looked up again: Host.Apply may have replaced it meanwhile.)
	o.dst.b, o.dst.backend, o.dst.target = h.named(found.name), found.name, target
	return nil
}
