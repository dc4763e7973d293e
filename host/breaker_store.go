package host

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/host/store"
)

// Circuit breaker state in the store (issue 25 item 7): an open circuit
// survives a restart and is seen by every replica, without a store round
// trip on a call's path.
//
//   - Write-through: each state change of a breaker (they are rare: not
//     per call) is queued (breakerQueue, never blocking; a full queue is
//     counted and logged) and written by one goroutine (store.SaveBreaker,
//     each write bounded by breakerIOTimeout), with the open period measured
//     by the database's clock.
//   - Load at New: the circuits still open by the database's clock are
//     applied before any call runs (bounded by breakerIOTimeout).
//   - Refresh: with a shared store (PostgreSQL, store.DB.Shared) the same
//     goroutine reads the live opens every breakerRefresh and applies other
//     processes' opens; an open that was closed elsewhere is lifted.
//
// An open applied from the store (a "remote" open) makes the breaker fail
// fast until its open period ends, measured on this process's clock from
// the time left by the database's clock (so a skewed clock neither shortens
// nor extends it); then the breaker is back to its own state (closed,
// unless it failed here too): the process that opened the circuit makes its
// half-open trial, and a failed trial opens it again everywhere. The local
// breaker (gobreaker) is not touched: the remote open is checked before it
// with one atomic load, nothing when there is none.
//
// It runs only when the host has a store configured (Options.Store or a
// [store] url): without one breakers stay in memory, as before.

// Bounds of the breaker state's store traffic.
const (
	breakerQueue     = 256
	breakerIOTimeout = 2 * time.Second
	breakerFlush     = 5 * time.Second // all the writes left at Close
)

// breakerRefresh is how often a shared store's breaker state is read.
// A variable for tests.
var breakerRefresh = time.Second

// breakerShare keeps a Host's breakers' state in its store.
type breakerShare struct {
	db     *store.DB
	origin string // this process: replica#instance
	logger hclog.Logger
	emit   func(Event)

	slots   sync.Map // store key → *remoteSlot
	queue   chan breakerWrite
	dropped atomic.Int64

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	failing   bool // the last refresh failed (logged once per streak); goroutine only
}

// breakerWrite is one state change waiting to be written.
type breakerWrite struct {
	key, state string
	failures   int
	cooldown   time.Duration
}

// remoteSlot holds a breaker's open applied from the store, if any.
type remoteSlot struct {
	p  atomic.Pointer[remoteOpen]
	br atomic.Pointer[breaker] // the breaker of the key, once made (the latest)
}

// remoteOpen is a circuit opened by another process (or by this host's
// previous run), as read from the store.
type remoteOpen struct {
	until    time.Time // on this process's clock
	openedAt time.Time // database clock
	origin   string
	failures int
}

// live returns the slot's open if it has not ended yet (one atomic load
// when there is none).
func (s *remoteSlot) live() *remoteOpen {
	if s == nil {
		return nil
	}
	if r := s.p.Load(); r != nil && time.Now().Before(r.until) {
		return r
	}
	return nil
}

// localState is the state of the slot's local breaker (closed if none
// was made).
func (s *remoteSlot) localState() string {
	if br := s.br.Load(); br != nil {
		return circuitName(br.cb.State())
	}
	return CircuitClosed
}

// backendKey and toolKey are the store keys of a backend's breaker and of
// one of its tools' (by catalogue name).
func backendKey(backend string) string    { return "backend:" + backend }
func toolKey(backend, tool string) string { return "tool:" + backend + "/" + tool }

// parseKey returns the backend and tool of a store key.
func parseKey(key string) (backend, tool string, ok bool) {
	if b, found := strings.CutPrefix(key, "backend:"); found {
		return b, "", true
	}
	if rest, found := strings.CutPrefix(key, "tool:"); found {
		b, t, ok := strings.Cut(rest, "/")
		return b, t, ok
	}
	return "", "", false
}

// startBreakerShare sets up h's breaker state in its store, when one is
// configured: it loads the live opens and starts the writer (and, for a
// shared store, the refresh). A store that cannot be opened or read is
// logged, and breakers stay in memory.
func (h *Host) startBreakerShare(ctx context.Context) {
	if h.opts.Store == nil && h.config().Store.URL == "" {
		return
	}
	// New's ctx may be done already (toolhost call does not wait for the
	// backends' start): loading the state is bounded on its own.
	ctx, cancelLoad := context.WithTimeout(context.WithoutCancel(ctx), breakerIOTimeout*5)
	defer cancelLoad()
	db, err := h.db(ctx)
	if err != nil {
		h.logger.Warn("circuit breakers stay in memory: no store", "error", err)
		return
	}
	s := &breakerShare{db: db, origin: db.Replica() + "#" + store.NewID()[:8], logger: h.logger.Named("breakers"), emit: h.emit,
		queue: make(chan breakerWrite, breakerQueue), stop: make(chan struct{}), done: make(chan struct{})}
	if err := s.refresh(ctx); err != nil {
		s.logger.Warn("could not load circuit breaker state; starting with every circuit closed", "store", db.String(), "error", err)
	}
	h.brShare = s
	h.closers = append(h.closers, s.close)
	go s.run()
}

// slot returns the remote slot of key (made on first use).
func (s *breakerShare) slot(key string) *remoteSlot {
	if s == nil {
		return nil
	}
	if v, ok := s.slots.Load(key); ok {
		return v.(*remoteSlot)
	}
	v, _ := s.slots.LoadOrStore(key, &remoteSlot{})
	return v.(*remoteSlot)
}

// save queues a breaker's state change for the store; it never blocks.
func (s *breakerShare) save(key, state string, failures int, cooldown time.Duration) {
	if s == nil {
		return
	}
	select {
	case s.queue <- breakerWrite{key: key, state: state, failures: failures, cooldown: cooldown}:
	default:
		n := s.dropped.Add(1)
		s.logger.Warn("circuit breaker state not written: queue full", "breaker", key, "state", state, "dropped", n)
	}
}

// run writes queued changes and, for a shared store, refreshes, until
// close; then writes what is left (each write bounded).
func (s *breakerShare) run() {
	defer close(s.done)
	var tick <-chan time.Time
	t := time.NewTicker(breakerRefresh)
	defer t.Stop()
	tick = t.C
	for {
		select {
		case w := <-s.queue:
			s.write(w)
		case <-tick:
			if s.db.Shared() {
				if err := s.refresh(context.Background()); err != nil {
					if !s.failing {
						s.logger.Warn("could not read circuit breaker state from the store; keeping what is known", "error", err)
					}
					s.failing = true
				} else if s.failing {
					s.logger.Info("circuit breaker state readable again")
					s.failing = false
				}
			}
			s.expire(time.Now())
		case <-s.stop:
			// What is queued is written, within breakerFlush in all: a
			// store that does not answer must not hold Close up for a
			// queue of writes (each bounded on its own).
			end := time.Now().Add(breakerFlush)
			for {
				select {
				case w := <-s.queue:
					if time.Now().After(end) {
						n := int64(1 + len(s.queue))
						s.logger.Warn("circuit breaker state not written at close: the store is too slow", "dropped", n, "total_dropped", s.dropped.Add(n))
						return
					}
					s.write(w)
				default:
					return
				}
			}
		}
	}
}

func (s *breakerShare) write(w breakerWrite) {
	ctx, cancel := context.WithTimeout(context.Background(), breakerIOTimeout)
	defer cancel()
	if err := s.db.SaveBreaker(ctx, w.key, w.state, w.failures, w.cooldown, s.origin); err != nil {
		s.logger.Warn("circuit breaker state not written", "breaker", w.key, "state", w.state, "error", err)
	}
}

// refresh reads the live opens and applies other processes' (and lifts
// the remote opens that are no longer live).
func (s *breakerShare) refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, breakerIOTimeout)
	defer cancel()
	rows, err := s.db.LiveOpenBreakers(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	seen := make(map[string]bool, len(rows))
	for _, r := range rows {
		if r.Origin == s.origin {
			continue
		}
		seen[r.Name] = true
		sl := s.slot(r.Name)
		if old := sl.p.Load(); old != nil && old.openedAt.Equal(r.OpenedAt) && old.origin == r.Origin {
			continue
		}
		sl.p.Store(&remoteOpen{until: now.Add(r.Remaining), openedAt: r.OpenedAt, origin: r.Origin, failures: r.Failures})
		s.logger.Warn("circuit open elsewhere: failing fast here too", "breaker", r.Name, "opened_by", r.Origin, "for", r.Remaining.Round(time.Millisecond))
		s.event(r.Name, CircuitOpen)
	}
	s.slots.Range(func(k, v any) bool {
		sl := v.(*remoteSlot)
		if r := sl.p.Load(); r != nil && !seen[k.(string)] {
			sl.p.Store(nil)
			if now.Before(r.until) {
				s.event(k.(string), sl.localState()) // closed elsewhere before its period ended
			}
		}
		return true
	})
	return nil
}

// expire lifts the remote opens whose period has ended.
func (s *breakerShare) expire(now time.Time) {
	s.slots.Range(func(k, v any) bool {
		sl := v.(*remoteSlot)
		if r := sl.p.Load(); r != nil && !now.Before(r.until) {
			if sl.p.CompareAndSwap(r, nil) {
				s.event(k.(string), sl.localState())
			}
		}
		return true
	})
}

// event emits the EventCircuit of a remote open applied or lifted.
func (s *breakerShare) event(key, state string) {
	if b, t, ok := parseKey(key); ok {
		s.emit(Event{Kind: EventCircuit, Backend: b, Tool: t, Circuit: state})
	}
}

// liveTools returns the tools of backend whose circuit is open from the
// store (catalogue name → "store: ORIGIN", where the open came from), whether or not a breaker of theirs was
// made here yet.
func (s *breakerShare) liveTools(backend string) map[string]string {
	if s == nil {
		return nil
	}
	var out map[string]string
	prefix := toolKey(backend, "")
	s.slots.Range(func(k, v any) bool {
		if tool, ok := strings.CutPrefix(k.(string), prefix); ok {
			if r := v.(*remoteSlot).live(); r != nil {
				if out == nil {
					out = map[string]string{}
				}
				out[tool] = "store: " + r.origin
			}
		}
		return true
	})
	return out
}

// close stops the goroutine after it has written what was queued.
func (s *breakerShare) close() error {
	s.closeOnce.Do(func() { close(s.stop) })
	<-s.done
	return nil
}
