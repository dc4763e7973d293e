package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The audit trail (table audit): rows written in batches by the host's
// audit writer (host/auditstore.go), queried by `toolhost audit` and
// GET /api/v1/audit, deleted after [store] audit_retention by SweepAudit.

// Errors of QueryAudit.
var (
	// ErrCursor: Filter.Cursor is not a cursor QueryAudit returned.
	ErrCursor = errors.New("store: bad audit cursor: pass back the next_cursor of the previous page unchanged")
	// ErrFilter: a Filter field is out of range (Limit above MaxAuditLimit,
	// Until before Since).
	ErrFilter = errors.New("store: bad audit filter")
)

// Audit query limits (Filter.Limit).
const (
	DefaultAuditLimit = 100
	MaxAuditLimit     = 1000
	// AuditBatch is how many rows InsertAudit writes per statement.
	AuditBatch = 256
)

// AuditRow is one row of the audit table: the columns queries filter on
// and the whole record as JSON (Record, what `toolhost audit --json`
// prints). Times are UTC with microsecond precision.
type AuditRow struct {
	ID            string    // 32 hex digits; InsertAudit fills in an empty one (TimeID of Time)
	Time          time.Time // the record's start time
	CorrelationID string
	Client        string
	Profile       string
	Op            string // "" for tools/call
	Backend       string
	Tool          string
	Decision      string
	Outcome       string
	Attempts      int     // tools/call: retries + 1; 0 for other operations
	LatencyMS     float64 // milliseconds
	ArgsHMAC      string
	TraceID       string
	Replica       string          // the process that wrote it; InsertAudit fills in an empty one (DB.Replica)
	Record        json.RawMessage // the host.AuditRecord as JSON (redacted arguments, never a result)
}

// AuditFilter selects audit rows (QueryAudit). Every field is optional;
// set fields are ANDed. String fields are matched exactly, except Tool.
type AuditFilter struct {
	// Tool is a glob of catalogue tool names: * matches any run of
	// characters, ? one character, everything else itself (case-sensitive,
	// on both engines).
	Tool          string
	Client        string
	Profile       string
	Outcome       string
	Backend       string
	CorrelationID string
	// Op is an AuditRecord.Op ("prompts/get", "admin/restart", ...);
	// "tools/call" selects tool calls (whose rows have op "").
	Op string
	// Since (inclusive) and Until (exclusive) bound the record's time;
	// zero means unbounded.
	Since, Until time.Time
	// Limit is the page size: 1..MaxAuditLimit, 0 for DefaultAuditLimit.
	Limit int
	// Cursor continues a query: the next cursor a previous QueryAudit with
	// the same filter returned ("" for the first page).
	Cursor string
}

// InsertAudit writes rows, AuditBatch rows per multi-row INSERT, all in
// one transaction. A row whose id is already there is skipped, so a batch
// retried after a lost commit acknowledgement is not written twice.
func (db *DB) InsertAudit(ctx context.Context, rows []AuditRow) error {
	if len(rows) == 0 {
		return nil
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	const cols = 16
	args := make([]any, 0, cols*min(len(rows), AuditBatch))
	var b strings.Builder
	for start := 0; start < len(rows); start += AuditBatch {
		chunk := rows[start:min(start+AuditBatch, len(rows))]
		b.Reset()
		args = args[:0]
		b.WriteString("INSERT INTO audit (id, time_us, correlation_id, client, profile, op, backend, tool, decision, outcome, attempts, latency_ms, args_hmac, trace_id, replica, record) VALUES ")
		for i := range chunk {
			r := &chunk[i]
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
			id, replica := r.ID, r.Replica
			if id == "" {
				id = TimeID(r.Time)
			}
			if replica == "" {
				replica = db.replica
			}
			rec := string(r.Record)
			if rec == "" {
				rec = "{}"
			}
			args = append(args, id, r.Time.UnixMicro(), r.CorrelationID, r.Client, r.Profile, r.Op, r.Backend, r.Tool,
				r.Decision, r.Outcome, r.Attempts, r.LatencyMS, r.ArgsHMAC, r.TraceID, replica, rec)
		}
		b.WriteString(" ON CONFLICT (id) DO NOTHING")
		if _, err := tx.ExecContext(ctx, db.q(b.String()), args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// QueryAudit returns the rows f selects, newest first (by time, then id),
// at most f.Limit of them, and the cursor of the next page ("" when this
// page is the last). Paging is by key (time, id), so rows written while a
// client pages do not shift or repeat what it sees. Errors: ErrFilter,
// ErrCursor, or the database's.
func (db *DB) QueryAudit(ctx context.Context, f AuditFilter) ([]AuditRow, string, error) {
	limit := f.Limit
	switch {
	case limit == 0:
		limit = DefaultAuditLimit
	case limit < 0 || limit > MaxAuditLimit:
		return nil, "", fmt.Errorf("%w: limit must be from 1 to %d, not %d", ErrFilter, MaxAuditLimit, limit)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		return nil, "", fmt.Errorf("%w: until (%s) is before since (%s)", ErrFilter, f.Until.Format(time.RFC3339), f.Since.Format(time.RFC3339))
	}
	var where []string
	var args []any
	add := func(cond string, a ...any) {
		where = append(where, cond)
		args = append(args, a...)
	}
	if f.Tool != "" {
		if db.engine == EnginePostgres {
			add(`tool LIKE ? ESCAPE '\'`, globToLike(f.Tool))
		} else {
			add("tool GLOB ?", globToSQLiteGlob(f.Tool))
		}
	}
	for _, eq := range []struct{ col, v string }{
		{"client", f.Client}, {"profile", f.Profile}, {"outcome", f.Outcome},
		{"backend", f.Backend}, {"correlation_id", f.CorrelationID},
	} {
		if eq.v != "" {
			add(eq.col+" = ?", eq.v)
		}
	}
	switch f.Op {
	case "":
	case "tools/call":
		add("op = ?", "")
	default:
		add("op = ?", f.Op)
	}
	if !f.Since.IsZero() {
		add("time_us >= ?", f.Since.UnixMicro())
	}
	if !f.Until.IsZero() {
		add("time_us < ?", f.Until.UnixMicro())
	}
	if f.Cursor != "" {
		us, id, err := parseCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		add("(time_us < ? OR (time_us = ? AND id < ?))", us, us, id)
	}
	query := "SELECT id, time_us, correlation_id, client, profile, op, backend, tool, decision, outcome, attempts, latency_ms, args_hmac, trace_id, replica, record FROM audit"
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY time_us DESC, id DESC LIMIT ?"
	args = append(args, limit+1)
	rs, err := db.sql.QueryContext(ctx, db.q(query), args...)
	if err != nil {
		return nil, "", err
	}
	defer rs.Close()
	var out []AuditRow
	for rs.Next() {
		var r AuditRow
		var us int64
		var rec string
		if err := rs.Scan(&r.ID, &us, &r.CorrelationID, &r.Client, &r.Profile, &r.Op, &r.Backend, &r.Tool, &r.Decision,
			&r.Outcome, &r.Attempts, &r.LatencyMS, &r.ArgsHMAC, &r.TraceID, &r.Replica, &rec); err != nil {
			return nil, "", err
		}
		r.Time, r.Record = time.UnixMicro(us).UTC(), json.RawMessage(rec)
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = strconv.FormatInt(last.Time.UnixMicro(), 10) + "." + last.ID
	}
	return out, next, nil
}

// parseCursor splits a cursor "TIME_US.ID" (ID: hex digits).
func parseCursor(c string) (int64, string, error) {
	ts, id, ok := strings.Cut(c, ".")
	us, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil || id == "" || len(id) > 64 {
		return 0, "", fmt.Errorf("%w: %q", ErrCursor, truncate(c, 80))
	}
	for _, ch := range id {
		if !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f') {
			return 0, "", fmt.Errorf("%w: %q", ErrCursor, truncate(c, 80))
		}
	}
	return us, id, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// globToLike turns a tool glob (* and ? special) into a LIKE pattern with
// \ as its escape character.
func globToLike(g string) string {
	var b strings.Builder
	for _, c := range g {
		switch c {
		case '*':
			b.WriteByte('%')
		case '?':
			b.WriteByte('_')
		case '%', '_', '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// globToSQLiteGlob turns a tool glob into an SQLite GLOB pattern: a [ is
// matched as itself ([[]), so character classes are not a feature.
func globToSQLiteGlob(g string) string {
	return strings.ReplaceAll(g, "[", "[[]")
}

// SweepChunk is how many rows SweepAudit and SweepIdempotency delete per
// statement.
const SweepChunk = 5000

// SweepAudit deletes the audit rows older than before and returns how
// many it deleted (the host's retention sweep, [store] audit_retention).
//
// It deletes them oldest first, SweepChunk rows per statement (each
// its own transaction), and after a full chunk waits as long as the chunk
// took before the next. One DELETE of a backlog holds the database's write
// lock throughout — 1,010,760 rows took 9.5 s on SQLite, and an audit
// batch written meanwhile failed with "database is locked" after
// busy_timeout's 5 s — and a cut one deletes nothing. In chunks, other
// writers have the lock at least half the time, and what a sweep cut by
// ctx deleted stays deleted. On PostgreSQL, replicas sweeping at once
// take disjoint chunks (FOR UPDATE SKIP LOCKED). Errors: ctx's and the
// database's, with the rows deleted before them.
func (db *DB) SweepAudit(ctx context.Context, before time.Time) (int64, error) {
	return db.sweepAudit(ctx, before, SweepChunk)
}

// sweepPaused, when set (tests), is called after each full chunk, before
// the pause.
var sweepPaused func()

func (db *DB) sweepAudit(ctx context.Context, before time.Time, chunk int) (int64, error) {
	q := "DELETE FROM audit WHERE rowid IN (SELECT rowid FROM audit WHERE time_us < ? ORDER BY time_us LIMIT ?)"
	if db.engine == EnginePostgres {
		q = db.q("DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE time_us < ? ORDER BY time_us LIMIT ? FOR UPDATE SKIP LOCKED)")
	}
	return db.deleteInChunks(ctx, q, chunk, before.UnixMicro())
}

// deleteInChunks runs q, a DELETE of at most chunk rows whose last
// parameter is that LIMIT, until it deletes fewer than chunk, pausing after
// each full chunk as long as it took (see SweepAudit); it returns the rows
// deleted, with the error that stopped it.
func (db *DB) deleteInChunks(ctx context.Context, q string, chunk int, args ...any) (int64, error) {
	args = append(args, chunk)
	var total int64
	for {
		t0 := time.Now()
		res, err := db.sql.ExecContext(ctx, q, args...)
		if err != nil {
			return total, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, err
		}
		total += n
		if n < int64(chunk) {
			return total, nil
		}
		if sweepPaused != nil {
			sweepPaused()
		}
		pause := time.NewTimer(time.Since(t0))
		select {
		case <-ctx.Done():
			pause.Stop()
			return total, ctx.Err()
		case <-pause.C:
		}
	}
}
