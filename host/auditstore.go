package host

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host/store"
)

// The audit trail in the store (issue 25, item 2): every audit record the
// host writes (auditor.write: tool calls, denials, prompts, resources,
// completions, elicitation and sampling, operator actions, and what other
// layers audit) is also queued here and written to the store's audit table
// by one goroutine, in batches, off the call's path. A call pays for a
// channel send of the record; when the queue is full it waits at most
// [store] queue_wait, then the record is dropped: counted (StoreStatus.
// Dropped) and logged at Warn level (at most once every 10 seconds), never
// silently. A store that fails (PostgreSQL stopped, a disk full) has its
// batch retried with backoff while the queue fills and drops as above;
// writing resumes when the store answers again. Host.Close flushes the
// queue (one attempt, bounded by auditFlushTimeout) before the store is
// closed. The same goroutines' sibling deletes the rows older than [store]
// audit_retention at start and every hour.

// Writer tuning.
const (
	auditBatchMax     = store.AuditBatch      // rows per batch
	auditBatchWait    = 50 * time.Millisecond // how long a batch waits to fill
	auditWriteTimeout = 10 * time.Second      // one attempt at writing a batch
	auditFlushTimeout = 5 * time.Second       // the last attempt, at Close
	auditBackoffMin   = 100 * time.Millisecond
	auditBackoffMax   = 5 * time.Second
	auditLogEvery     = 10 * time.Second // a drop or failure is logged at most this often
)

// auditSweepEvery is how often the retention sweep runs (a variable for
// tests).
var auditSweepEvery = time.Hour

// storeAuditOn reports whether audit records go to the store: a store is
// configured (Options.Store, or [store] url) and [store] audit is on.
// Without either, a Host keeps no audit trail in its (in-memory) store.
func storeAuditOn(cfg *config.Config, opts *Options) bool {
	return (opts.Store != nil || cfg.Store.URL != "") && cfg.Store.AuditOn()
}

// auditStore is the queue and writer of audit rows.
type auditStore struct {
	db        func(context.Context) (*store.DB, error)
	ch        chan AuditRecord
	wait      time.Duration // [store] queue_wait
	retention time.Duration // [store] audit_retention; 0 keeps every row
	logger    hclog.Logger

	kick    chan struct{} // put: the queue holds a batch (buffered 1)
	kickAt  int           // the queue's length that kicks: a batch, or half the queue if less
	stopped atomic.Bool
	stop    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once

	written  atomic.Int64
	dropped  atomic.Int64
	swept    atomic.Int64
	dropLog  atomic.Int64 // unix nanoseconds of the last drop logged
	errMu    sync.Mutex
	lastErr  string // the last write or sweep failure ("" once a write succeeds)
	failLog  time.Time
	failures int64
}

// newAuditStore starts the writer (and the retention sweep) of a Host whose
// store db returns.
func newAuditStore(db func(context.Context) (*store.DB, error), cfg *config.Config, logger hclog.Logger) *auditStore {
	size := cfg.Store.QueueSize
	if size <= 0 {
		size = config.DefaultStoreQueueSize
	}
	wait := cfg.Store.QueueWait.Std()
	if wait <= 0 {
		wait = config.DefaultStoreQueueWait
	}
	s := &auditStore{db: db, ch: make(chan AuditRecord, size), wait: wait, retention: cfg.Store.Retention(),
		logger: logger.Named("store"), stop: make(chan struct{}), kick: make(chan struct{}, 1), kickAt: max(1, min(auditBatchMax, size/2))}
	s.wg.Add(2)
	go s.run()
	go s.sweepLoop()
	return s
}

// put queues rec for the store (a copy: the caller may reuse rec). It
// waits at most s.wait for room, then drops the record.
func (s *auditStore) put(rec *AuditRecord) {
	if s.stopped.Load() {
		s.drop("the host is closing")
		return
	}
	select {
	case s.ch <- *rec:
		s.kickFull()
		return
	default:
	}
	t := time.NewTimer(s.wait)
	defer t.Stop()
	select {
	case s.ch <- *rec:
		s.kickFull()
	case <-t.C:
		s.drop("the queue is full")
	case <-s.stop:
		s.drop("the host is closing")
	}
}

// kickFull tells the writer that the queue holds a batch, when it does.
func (s *auditStore) kickFull() {
	if len(s.ch) >= s.kickAt {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// drop counts a record that will not reach the store, and logs it (at
// most once every auditLogEvery).
func (s *auditStore) drop(why string) {
	n := s.dropped.Add(1)
	now := time.Now().UnixNano()
	if last := s.dropLog.Load(); now-last >= int64(auditLogEvery) && s.dropLog.CompareAndSwap(last, now) {
		s.logger.Warn("audit records dropped: not written to the store ([store] queue_size, queue_wait)", "why", why, "dropped", n, "last_error", s.lastError())
	}
}

// close stops the writer after one last attempt at writing what is queued
// (bounded by auditFlushTimeout), and the sweep. Idempotent.
func (s *auditStore) close() {
	s.once.Do(func() {
		s.stopped.Store(true)
		close(s.stop)
		s.wg.Wait()
	})
}

// run is the writer: it takes a batch (up to auditBatchMax records, or what
// came within auditBatchWait of the first) and writes it, retrying with
// backoff until it is written or the host closes.
func (s *auditStore) run() {
	defer s.wg.Done()
	batch := make([]store.AuditRow, 0, auditBatchMax)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case rec := <-s.ch:
			batch = append(batch, rowOf(&rec))
		case <-s.stop:
			s.flush()
			return
		}
		// The batch fills in the queue, not record by record: a receive
		// per record woke this goroutine (and an OS thread) on every
		// call. It is taken when the window ends or the queue holds a
		// batch (put kicks), whichever comes first.
		if len(s.ch) < s.kickAt {
			timer.Reset(auditBatchWait)
			select {
			case <-timer.C:
			case <-s.kick:
			case <-s.stop:
			}
			timer.Stop()
		}
	fill:
		for len(batch) < auditBatchMax {
			select {
			case rec := <-s.ch:
				batch = append(batch, rowOf(&rec))
			default:
				break fill
			}
		}
		if !s.writeRetrying(batch) {
			// Closing while the store fails: the last attempt with
			// what is queued too.
			s.flush(batch...)
			return
		}
		batch = batch[:0]
	}
}

// writeRetrying writes batch, retrying with backoff; false when the host
// closed before it could.
func (s *auditStore) writeRetrying(batch []store.AuditRow) bool {
	backoff := auditBackoffMin
	for {
		if err := s.write(batch, auditWriteTimeout); err == nil {
			return true
		}
		select {
		case <-s.stop:
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, auditBackoffMax)
	}
}

// flush makes one attempt (bounded by auditFlushTimeout) at writing pending
// and everything queued; what it cannot write is counted as dropped.
func (s *auditStore) flush(pending ...store.AuditRow) {
	rows := pending
	for {
		select {
		case rec := <-s.ch:
			rows = append(rows, rowOf(&rec))
			continue
		default:
		}
		break
	}
	if len(rows) == 0 {
		return
	}
	if err := s.write(rows, auditFlushTimeout); err != nil {
		s.dropped.Add(int64(len(rows)))
		s.logger.Warn("audit records dropped at close: the store did not take them", "dropped", len(rows), "error", err)
	}
}

// write makes one attempt at writing rows.
func (s *auditStore) write(rows []store.AuditRow, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	db, err := s.db(ctx)
	if err == nil {
		err = db.InsertAudit(ctx, rows)
	}
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if err != nil {
		s.lastErr = err.Error()
		s.failures++
		if now := time.Now(); now.Sub(s.failLog) >= auditLogEvery {
			s.failLog = now
			s.logger.Warn("audit store write failed: retrying; records wait in the queue and are dropped when it is full", "rows", len(rows), "error", err, "failures", s.failures)
		}
		return err
	}
	if s.lastErr != "" {
		s.logger.Info("audit store writes again", "rows", len(rows))
	}
	s.lastErr = ""
	s.written.Add(int64(len(rows)))
	return nil
}

func (s *auditStore) lastError() string {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.lastErr
}

// sweepLoop deletes the rows older than the retention at start and every
// auditSweepEvery, until the host closes.
func (s *auditStore) sweepLoop() {
	defer s.wg.Done()
	if s.retention <= 0 {
		return
	}
	t := time.NewTicker(auditSweepEvery)
	defer t.Stop()
	for {
		s.sweep()
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// sweepBudget bounds one retention sweep. It deletes in chunks and keeps
// what it deleted (store.SweepAudit), so a backlog too large for one sweep
// shrinks sweep after sweep; sweeps, an hour apart, never overlap.
const sweepBudget = 30 * time.Minute

// sweep deletes the rows older than the retention once.
func (s *auditStore) sweep() {
	ctx, cancel := context.WithTimeout(context.Background(), sweepBudget)
	defer cancel()
	go func() {
		// Closing the host ends a sweep in progress.
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	db, err := s.db(ctx)
	var n int64
	if err == nil {
		n, err = db.SweepAudit(ctx, time.Now().Add(-s.retention))
	}
	s.swept.Add(n)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			s.logger.Warn("audit retention sweep failed; the next runs in an hour", "deleted", n, "error", err)
		}
		return
	}
	if n > 0 {
		s.logger.Info("audit retention sweep", "deleted", n, "older_than", s.retention.String())
	}
}

// rowOf returns the store row of rec: its columns, and rec as JSON.
func rowOf(rec *AuditRecord) store.AuditRow {
	line := appendRecord(make([]byte, 0, 512+len(rec.Args)+len(rec.Error)), rec)
	r := store.AuditRow{Time: rec.Time, CorrelationID: rec.CorrelationID, Client: rec.Client, Profile: rec.Profile,
		Op: rec.Op, Backend: rec.Backend, Tool: rec.Tool, Decision: rec.Decision, Outcome: rec.Outcome,
		LatencyMS: rec.LatencyMS, ArgsHMAC: rec.ArgsHMAC, TraceID: rec.TraceID, Record: line[:len(line)-1]}
	if rec.Op == "" {
		r.Attempts = rec.Retries + 1
	}
	return r
}

// StoreStatus is the state of the host's store (Host.StoreStatus; the
// "store" object of toolhost status --json and GET /api/v1/status).
type StoreStatus struct {
	Engine string `json:"engine"` // "sqlite" or "postgres"; "" when not open yet
	URL    string `json:"url"`    // without a password
	// Mode is "persistent", or "memory" for an in-memory SQLite store
	// (state lasts as long as the process: no [store] url outside serve,
	// or serve's store could not be opened and [store] required = false).
	Mode string `json:"mode"`
	// Audit reports whether audit records go to the store ([store] audit);
	// the counts below are of this process since start.
	Audit     bool   `json:"audit"`
	Queued    int    `json:"queued"`               // records waiting to be written
	Written   int64  `json:"written"`              // rows written
	Dropped   int64  `json:"dropped"`              // records that will never be written (queue full, store failing at close)
	Swept     int64  `json:"swept,omitempty"`      // rows deleted by the retention sweep
	LastError string `json:"last_error,omitempty"` // the last failure to write, until a write succeeds
}

// StoreStatus returns the state of the host's store and of its audit
// writer. It does not open the store.
func (h *Host) StoreStatus() StoreStatus {
	var st StoreStatus
	h.state.mu.Lock()
	db, err := h.state.db, h.state.err
	h.state.mu.Unlock()
	if db == nil {
		db = h.opts.Store
	}
	if db != nil {
		st.Engine, st.URL, st.Mode = db.Engine(), db.String(), "persistent"
		if db.String() == "sqlite::memory:" {
			st.Mode = "memory"
		}
	} else {
		st.URL, st.Mode = h.config().Store.URL, "memory"
		if st.URL != "" {
			st.Mode = "persistent"
		}
		if err != nil {
			st.LastError = err.Error()
		}
	}
	if h.audit != nil && h.audit.store != nil {
		s := h.audit.store
		st.Audit, st.Queued, st.Written, st.Dropped, st.Swept = true, len(s.ch), s.written.Load(), s.dropped.Load(), s.swept.Load()
		if e := s.lastError(); e != "" {
			st.LastError = e
		}
	}
	return st
}

// QueryAudit returns the audit rows f selects from the host's store, newest
// first, and the cursor of the next page (see store.DB.QueryAudit). Rows
// still in the writer's queue (at most 50 ms old, or more while the store
// is failing) are not seen. Errors: store.ErrFilter, store.ErrCursor, or
// ErrStoreUnavailable.
func (h *Host) QueryAudit(ctx context.Context, f store.AuditFilter) ([]store.AuditRow, string, error) {
	db, err := h.db(ctx)
	if err != nil {
		return nil, "", err
	}
	rows, next, err := db.QueryAudit(ctx, f)
	if err != nil && !errors.Is(err, store.ErrFilter) && !errors.Is(err, store.ErrCursor) {
		return nil, "", errors.Join(ErrStoreUnavailable, err)
	}
	return rows, next, err
}
