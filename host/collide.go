package host

import (
	"fmt"
)

// collide settles two tools that map to the same catalogue name during a
// rebuild: prev, already in the catalogue being built, and backend b's tool
// tool. The one that holds the name in the catalogue in force keeps it, so
// that a backend that starts (or restarts) later never takes a name from
// one that already serves it; when neither holds it, prev (the earlier
// backend in configuration order) keeps it. The other is excluded with an
// error wrapping ErrNameCollision that names both sources (DESIGN decision
// 5: never a silent shadowing). It reports true when b's tool is the one
// left out; otherwise prev was moved to excluded and the caller puts b's
// tool in its place. The caller holds rebuildMu.
func (h *Host) collide(name string, prev entry, b *backend, tool string, errs *[]error, excluded *[]Excluded) (skipNew bool) {
	h.mu.RLock()
	incumbent, held := h.tools[name]
	h.mu.RUnlock()
	keepNew := held && incumbent.b == b && incumbent.name == tool && prev.b != b
	loser, loserTool, winner, winnerTool := b, tool, prev.b, prev.name
	if keepNew {
		loser, loserTool, winner, winnerTool = prev.b, prev.name, b, tool
	}
	err := fmt.Errorf("%w: %q is both %s's tool %q and %s's tool %q; %s's is served, %s's left out: set prefix on one of the backends",
		ErrNameCollision, name, winner.name, winnerTool, loser.name, loserTool, winner.name, loser.name)
	*errs = append(*errs, err)
	*excluded = append(*excluded, Excluded{Backend: loser.name, Tool: loserTool, Reason: err.Error()})
	return !keepNew
}

// noteCollisions logs, once per distinct collision, the ones a rebuild
// found (they repeat on every rebuild while both backends are up).
func (h *Host) noteCollisions(errs []error) {
	for _, err := range errs {
		key := [3]string{"", "collision", err.Error()}
		if h.dropLogged[key] {
			continue
		}
		if h.dropLogged == nil || len(h.dropLogged) >= maxDropLogged {
			h.dropLogged = map[[3]string]bool{}
		}
		h.dropLogged[key] = true
		h.logger.Warn("tool left out of the catalogue: its name collides", "error", err)
	}
}
