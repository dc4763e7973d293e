package gateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/toolhost/toolhost/host"
)

// The audit ring: the last audit records the gateway saw (Metrics.Record,
// which Relay chains into host.Options.Audit), for GET /api/v1/audit, the
// dashboard's audit table and per-tool summary, and the "audit" events of
// GET /api/v1/events. It lives in memory only: [host] audit_log is the
// durable record.

const (
	// AuditRingSize is how many audit records the gateway keeps in memory
	// (the newest; older ones are dropped).
	AuditRingSize = 1000
	// maxRingArgs, maxRingError and maxRingName bound what one kept
	// record holds, so that the ring is bounded in bytes too (about 16
	// MiB at most): Args longer than 8 KiB of JSON are replaced by a JSON
	// string saying how long they were, an Error longer than 2 KiB is cut
	// (with "…"), and so are a Tool, Prompt, URI or Rule (a client may
	// call a made-up name) longer than 1 KiB.
	maxRingArgs  = 8 << 10
	maxRingError = 2 << 10
	maxRingName  = 1 << 10
)

// auditRing is a fixed-size ring of audit records with subscribers. The
// zero value is not usable: use newAuditRing.
type auditRing struct {
	mu   sync.Mutex
	buf  []host.AuditRecord // len AuditRingSize once full; next is the oldest
	next int
	subs map[*ringSub]struct{}
}

// ringSub is one subscriber: fn is called with the lock held, in the
// order records were added, and must not block.
type ringSub struct{ fn func(host.AuditRecord) }

func newAuditRing() *auditRing {
	return &auditRing{buf: make([]host.AuditRecord, 0, AuditRingSize), subs: map[*ringSub]struct{}{}}
}

// add keeps r (bounded: see maxRingArgs) and hands it to every subscriber.
func (a *auditRing) add(r host.AuditRecord) {
	if len(r.Args) > maxRingArgs {
		r.Args, _ = json.Marshal(fmt.Sprintf("[truncated: %d bytes of arguments]", len(r.Args)))
	}
	if len(r.Error) > maxRingError {
		r.Error = truncateUTF8(r.Error, maxRingError) + "…"
	}
	for _, s := range []*string{&r.Tool, &r.Prompt, &r.URI, &r.Rule} {
		if len(*s) > maxRingName {
			*s = truncateUTF8(*s, maxRingName) + "…"
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.buf) < AuditRingSize {
		a.buf = append(a.buf, r)
	} else {
		a.buf[a.next] = r
		a.next = (a.next + 1) % AuditRingSize
	}
	for s := range a.subs {
		s.fn(r)
	}
}

// last returns up to limit records that match (all when match is nil),
// newest first.
func (a *auditRing) last(limit int, match func(*host.AuditRecord) bool) []host.AuditRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := []host.AuditRecord{}
	n := len(a.buf)
	for i := 0; i < n && len(out) < limit; i++ {
		// newest is just before next (or the end, before the ring is full)
		r := &a.buf[(a.next-1-i+2*n)%n]
		if match == nil || match(r) {
			out = append(out, *r)
		}
	}
	return out
}

// subscribe calls fn with every record added from now on (under the
// ring's lock: fn must not block) until cancel is called.
func (a *auditRing) subscribe(fn func(host.AuditRecord)) (cancel func()) {
	s := &ringSub{fn: fn}
	a.mu.Lock()
	a.subs[s] = struct{}{}
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		delete(a.subs, s)
		a.mu.Unlock()
	}
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// toolStat is the dashboard's per-tool summary, over the tools/call
// records in the ring.
type toolStat struct {
	Tool, Backend string
	Calls, Errors int     // errors: every outcome but ok
	P50, P99      float64 // latency, milliseconds (nearest rank)
}

// ringToolStats summarises recs (newest first or any order) per tool, sorted
// by tool name.
func ringToolStats(recs []host.AuditRecord) []toolStat {
	by := map[string]*toolStat{}
	lat := map[string][]float64{}
	for _, r := range recs {
		if r.Op != "" || r.Tool == "" || r.Outcome == host.OutcomeUnknownTool {
			continue
		}
		s := by[r.Tool]
		if s == nil {
			s = &toolStat{Tool: r.Tool, Backend: r.Backend}
			by[r.Tool] = s
		}
		s.Calls++
		if r.Outcome != host.OutcomeOK {
			s.Errors++
		}
		lat[r.Tool] = append(lat[r.Tool], r.LatencyMS)
	}
	out := make([]toolStat, 0, len(by))
	for name, s := range by {
		l := lat[name]
		slices.Sort(l)
		s.P50, s.P99 = nearestRank(l, 50), nearestRank(l, 99)
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b toolStat) int {
		switch {
		case a.Tool < b.Tool:
			return -1
		case a.Tool > b.Tool:
			return 1
		}
		return 0
	})
	return out
}

// nearestRank is the p-th percentile of sorted (nearest-rank method).
func nearestRank(sorted []float64, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted)+99)/100 - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
