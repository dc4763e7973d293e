package host

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/toolhost/toolhost/host/store"
)

// State that survives a restart and is shared by replicas (issue 25): the
// host keeps it in a store (host/store), through the pipeline's pin, grant,
// rate and idempotency layers, the audit layer's writer and the breaker
// layer. This file has the errors those layers return and the host's handle
// on its store.

var (
	// ErrGrantRequired: the tool needs a grant ([tools.NAME] grant =
	// "required" or "ask", [policy] require_grant) and the caller (its
	// client or profile) has no live one, or an approval asked for was
	// declined or not answered in time. Kind grant_required, HTTP 403,
	// exit code 4.
	ErrGrantRequired = errors.New("grant required")

	// ErrRateLimited: the caller is over a rate limit ([serve.clients.NAME],
	// [profiles.NAME] or [tools.NAME] rate), or a client at its
	// max_concurrent. Kind rate_limited, HTTP 429 with Retry-After.
	ErrRateLimited = errors.New("rate limited")

	// ErrToolChanged: the tool's definition differs from the one approved
	// (tool-definition pinning): it is quarantined until approved again
	// (toolhost approve). Kind tool_changed, HTTP 409.
	ErrToolChanged = errors.New("tool definition changed")

	// ErrIdempotencyConflict: an idempotency key was used again with other
	// arguments (or for another tool). Kind idempotency_conflict, HTTP 409.
	ErrIdempotencyConflict = errors.New("idempotency key reused with different arguments")

	// ErrStoreUnavailable: the store could not answer a question a call
	// depends on (a grant, a shared rate limit, an idempotency key) within
	// its bound; the call is refused rather than let through. Kind
	// store_unavailable, HTTP 503.
	ErrStoreUnavailable = errors.New("store unavailable")
)

// stateStore is the Host's handle on its store: Options.Store, else the
// [store] url of the configuration, else an in-memory SQLite database,
// opened at the first need (db).
type stateStore struct {
	mu    sync.Mutex
	db    *store.DB
	own   bool  // opened by the host: closed by Host.Close
	err   error // the last failure to open it
	errAt time.Time
	// opening is closed when the open in progress (openStore) ends.
	opening chan struct{}
	closed  bool // closeStore ran: no more opens
	// cancelOpen cancels the open in progress.
	cancelOpen context.CancelFunc
	memory     bool // memory-only mode: [store] required = false and the store could not be opened, or no store configured
}

// db returns the host's store, opening it at the first call (see
// stateStore). The open runs on the host's own context, bounded by
// storeOpenTimeout, not on the caller's: a call with a short deadline stops
// waiting for it (ctx.Err wrapped in ErrStoreUnavailable) but does not
// interrupt it (a migration cut short halfway). A failed open is tried
// again at a call after storeRetryAfter. Errors wrap ErrStoreUnavailable.
func (h *Host) db(ctx context.Context) (*store.DB, error) {
	s := &h.state
	s.mu.Lock()
	if s.db != nil {
		db := s.db
		s.mu.Unlock()
		return db, nil
	}
	if h.opts.Store != nil {
		s.db = h.opts.Store
		s.mu.Unlock()
		return h.opts.Store, nil
	}
	if s.closed {
		s.mu.Unlock()
		return nil, errors.Join(ErrStoreUnavailable, ErrClosed)
	}
	if s.err != nil && time.Since(s.errAt) < storeRetryAfter {
		err := s.err
		s.mu.Unlock()
		return nil, errors.Join(ErrStoreUnavailable, err)
	}
	if s.opening == nil {
		s.opening = make(chan struct{})
		url := h.config().Store.URL
		memory := url == ""
		if memory {
			url = "sqlite::memory:"
		}
		// Not h.ctx: the audit writer's last flush in Close may be the
		// first use of the store (toolhost call), after h.ctx is
		// cancelled; closeStore cancels this one.
		octx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
		s.cancelOpen = cancel
		go h.openStore(octx, url, memory, s.opening)
	}
	ch := s.opening
	s.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return nil, errors.Join(ErrStoreUnavailable, ctx.Err())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil, errors.Join(ErrStoreUnavailable, s.err)
	}
	return s.db, nil
}

// Bounds of the host's own opening of its store (db).
const (
	storeOpenTimeout = 30 * time.Second
	storeRetryAfter  = 5 * time.Second
)

// openStore opens the store at url for db and closes done when it is
// open or has failed. A store opened after closeStore is closed at once.
func (h *Host) openStore(ctx context.Context, url string, memory bool, done chan struct{}) {
	db, err := store.Open(ctx, url, store.Options{})
	s := &h.state
	s.mu.Lock()
	defer s.mu.Unlock()
	defer close(done)
	s.opening = nil
	s.cancelOpen()
	switch {
	case err != nil:
		s.err, s.errAt = err, time.Now()
	case s.closed:
		db.Close()
		s.err, s.errAt = ErrClosed, time.Now()
	default:
		s.db, s.own, s.memory, s.err = db, true, memory, nil
	}
}

// Store returns the store the host keeps its state in, opening it if it
// is not open yet (see Options.Store). Errors wrap ErrStoreUnavailable.
func (h *Host) Store(ctx context.Context) (*store.DB, error) { return h.db(ctx) }

// closeStore closes the store if the host opened it (Host.Close, after the
// layers' writers have flushed).
func (h *Host) closeStore() error {
	s := &h.state
	s.mu.Lock()
	// An open in progress is cancelled, and closes what it opened itself.
	s.closed = true
	if ch := s.opening; ch != nil {
		s.cancelOpen()
		s.mu.Unlock()
		<-ch
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	if s.db == nil || !s.own {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}
