package host

import (
	"context"
	"slices"
)

// catalogueChanged rebuilds the catalogue after a backend's tools or state
// changed and emits an EventCatalogue with the names added and removed.
func (h *Host) catalogueChanged() {
	h.rebuildMu.Lock()
	defer h.rebuildMu.Unlock()
	before := h.visibleNames()
	if err := h.rebuild(false); err != nil {
		h.logger.Error("catalogue", "error", err)
	}
	after := h.visibleNames()
	var added, removed []string
	for _, n := range after {
		if _, ok := slices.BinarySearch(before, n); !ok {
			added = append(added, n)
		}
	}
	for _, n := range before {
		if _, ok := slices.BinarySearch(after, n); !ok {
			removed = append(removed, n)
		}
	}
	if len(added)+len(removed) > 0 {
		h.emit(Event{Kind: EventCatalogue, Added: added, Removed: removed})
	}
}

// visibleNames is the sorted catalogue names whose backend has not failed.
func (h *Host) visibleNames() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []string
	for _, n := range h.names {
		if h.tools[n].b.listed() && !h.quarantined(n) {
			out = append(out, n)
		}
	}
	return out
}

// ensureStarted starts every lazy backend that has never started and waits
// (within ctx) until each is ready or has failed its attempt, so its tools
// are known.
func (h *Host) ensureStarted(ctx context.Context) {
	var waiting []*backend
	for _, b := range h.all() {
		b.mu.Lock()
		if !b.known && (b.state == StateIdle || b.state == StateStarting) {
			waiting = append(waiting, b)
			if b.state == StateIdle {
				select {
				case b.startReq <- struct{}{}:
				default:
				}
			}
		}
		b.mu.Unlock()
	}
	for _, b := range waiting {
	wait:
		for {
			b.mu.Lock()
			state, wake := b.state, b.wake
			b.mu.Unlock()
			if state != StateIdle && state != StateStarting {
				break
			}
			select {
			case <-wake:
			case <-ctx.Done():
				break wait
			case <-h.stop:
				break wait
			}
		}
	}
}
