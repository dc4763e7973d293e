package host

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resolveLayer finds the backend an op goes to. A tools/call starts its
// clock here (op.start: its one deadline runs from now, or from the start
// WithCallStart gave; see deadlineLayer).
// Its catalogue name is looked up in the catalogue; a name not there yet
// may belong to a backend whose tools are not known yet (lazy and not
// started, starting, or restarting after a failed first start): it is
// started and waited for within the call's deadline (see Host.resolve), and
// an unknown name is an *UnknownToolError suggesting names of the caller's
// view only. A
// prompts/get's name is found among every ready backend's prompts (allowed
// or not, so that a denied prompt is told apart from an unknown one). A
// resources/read goes to the backend the caller named.
func resolveLayer(h *Host, next handler) handler {
	return func(ctx context.Context, o *op) (any, error) {
		switch o.method {
		case methodCallTool:
			o.start = callStart(ctx, o)
			h.mu.RLock()
			e, ok := h.tools[o.name]
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
				e, ok, unavailable = h.resolve(wctx, o.name)
				if !ok && unavailable == nil {
					h.ensureStarted(wctx)
					e, ok, unavailable = h.resolve(wctx, o.name)
				}
				cancel()
				if !ok && unavailable != nil {
					if o.rec != nil {
						o.rec.Backend = unavailable.(*resolveError).backend
					}
					return nil, fmt.Errorf("%s: %w", o.name, unavailable)
				}
				// The catalogue changed while we waited: so did the view.
				h.mu.RLock()
				o.vw = h.views[o.profile]
				h.mu.RUnlock()
				if o.vw == nil {
					return nil, profileRemoved(o.profile)
				}
			}
			if !ok {
				return nil, &UnknownToolError{Name: o.name, Similar: similar(o.name, o.vw.names)}
			}
			o.e, o.b, o.target = e, e.b, e.name
		case methodGetPrompt:
			if err := h.resolvePrompt(ctx, o); err != nil {
				return nil, err
			}
		case methodComplete:
			switch ref := o.complete.Ref; {
			case ref == nil:
				return nil, fmt.Errorf("%s: %w: no ref", o.method, ErrInvalidArguments)
			case ref.Type == refPrompt:
				if err := h.resolvePrompt(ctx, o); err != nil {
					return nil, fmt.Errorf("%s: %w", o.method, err)
				}
				return next(ctx, o)
			case ref.Type != refResource:
				return nil, fmt.Errorf("%s: %w: ref type %q (want ref/prompt or ref/resource)", o.method, ErrInvalidArguments, ref.Type)
			}
			if h.isClosed() {
				return nil, ErrClosed
			}
			if o.b = h.resourceBackend(ctx, o.name); o.b == nil {
				return nil, fmt.Errorf("%s: %w: no ready backend lists the resource or template %q", o.method, ErrUnknownBackend, o.name)
			}
			o.backend = o.b.name
		case methodReadResource:
			if h.isClosed() {
				return nil, ErrClosed
			}
			if o.b = h.named(o.backend); o.b == nil {
				return nil, fmt.Errorf("%w: no backend %q", ErrBackendUnavailable, o.backend)
			}
		}
		return next(ctx, o)
	}
}

// resolvePrompt finds the ready backend that offers the prompt o.name (a
// catalogue name) and sets o.backend, o.b and o.target (its own name).
// Errors: ErrClosed; a prompt no ready backend offers wraps ErrUnknownTool.
func (h *Host) resolvePrompt(ctx context.Context, o *op) error {
	var found *backend
	for _, b := range h.readyBackends() {
		ps, err := h.send(ctx, &op{method: methodListPrompts, b: b})
		if err != nil {
			continue
		}
		for _, p := range ps.([]*mcp.Prompt) {
			if catalogueName(b.prefix, p.Name) == o.name {
				found, o.target = b, p.Name
			}
		}
	}
	if h.isClosed() {
		return ErrClosed
	}
	if found == nil {
		return fmt.Errorf("prompt %q: %w", o.name, ErrUnknownTool)
	}
	o.backend = found.name
	// (Looked up again: Host.Apply may have replaced it meanwhile.)
	o.b = h.named(found.name)
	return nil
}
