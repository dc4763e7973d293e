package store

import (
	"context"
	"fmt"
	"time"
)

// Circuit breaker state (table breakers): one row per breaker, written
// through by the host on each state change (off the call's path) and read
// at start and, for a shared store, every second by each replica, so that a
// circuit opened by one process is open in every process until its open
// period ends by the database's clock.

// Breaker states, as stored (BreakerRow.State).
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half-open"
)

// BreakerRow is one breaker's stored state.
type BreakerRow struct {
	// Name is the breaker's key: "backend:NAME" for a backend's breaker,
	// "tool:NAME" (catalogue name) for a tool's; the host chooses it.
	Name string
	// State is BreakerClosed, BreakerOpen or BreakerHalfOpen.
	State string
	// Failures is the number of consecutive failures that opened it.
	Failures int
	// OpenedAt is when it opened and Until when its open period ends,
	// both by the database's clock (zero unless State is BreakerOpen).
	OpenedAt, Until time.Time
	// Remaining is Until minus the database's now when the row was read
	// (LiveOpenBreakers): add it to the reader's own clock, so that a
	// replica whose clock is skewed still ends the open period on time.
	Remaining time.Duration
	// Origin is who wrote the row (the host's replica name and instance).
	Origin string
	// UpdatedAt is when it was written (database clock).
	UpdatedAt time.Time
}

// SaveBreaker writes the state of breaker name (upsert). For BreakerOpen,
// the open period starts now by the database's clock and lasts cooldown;
// any other state clears it. origin names the writer. Errors are the
// engine's, wrapped.
func (db *DB) SaveBreaker(ctx context.Context, name, state string, failures int, cooldown time.Duration, origin string) error {
	switch state {
	case BreakerClosed, BreakerOpen, BreakerHalfOpen:
	default:
		return fmt.Errorf("store: breaker %q: unknown state %q", name, state)
	}
	// One reading of the clock per statement (clock_timestamp() changes
	// within one), hence the subquery; "WHERE true" resolves SQLite's
	// parsing ambiguity of INSERT ... SELECT ... ON CONFLICT
	// (https://sqlite.org/lang_upsert.html, "Parsing Ambiguity").
	now := db.nowMicros()
	var err error
	if state == BreakerOpen {
		_, err = db.sql.ExecContext(ctx, db.q(`INSERT INTO breakers (name, state, failures, opened_us, until_us, updated_us, origin)
SELECT ?, ?, ?, n, n + ?, n, ? FROM (SELECT `+now+` AS n) AS clock WHERE true
ON CONFLICT (name) DO UPDATE SET state = excluded.state, failures = excluded.failures, opened_us = excluded.opened_us,
  until_us = excluded.until_us, updated_us = excluded.updated_us, origin = excluded.origin`),
			name, state, failures, cooldown.Microseconds(), origin)
	} else {
		_, err = db.sql.ExecContext(ctx, db.q(`INSERT INTO breakers (name, state, failures, opened_us, until_us, updated_us, origin)
SELECT ?, ?, ?, NULL, NULL, n, ? FROM (SELECT `+now+` AS n) AS clock WHERE true
ON CONFLICT (name) DO UPDATE SET state = excluded.state, failures = excluded.failures, opened_us = NULL,
  until_us = NULL, updated_us = excluded.updated_us, origin = excluded.origin`),
			name, state, failures, origin)
	}
	if err != nil {
		return fmt.Errorf("store: save breaker %q: %w", name, err)
	}
	return nil
}

// LiveOpenBreakers returns the breakers that are open now by the database's
// clock (their open period has not ended), each with its Remaining time.
func (db *DB) LiveOpenBreakers(ctx context.Context) ([]BreakerRow, error) {
	now := db.nowMicros()
	rows, err := db.sql.QueryContext(ctx, db.q(`SELECT name, state, failures, opened_us, until_us, origin, updated_us, n
FROM breakers, (SELECT `+now+` AS n) AS clock WHERE state = ? AND until_us > n ORDER BY name`), BreakerOpen)
	if err != nil {
		return nil, fmt.Errorf("store: read breakers: %w", err)
	}
	defer rows.Close()
	var out []BreakerRow
	for rows.Next() {
		var r BreakerRow
		var opened, until, updated, nowUS int64
		if err := rows.Scan(&r.Name, &r.State, &r.Failures, &opened, &until, &r.Origin, &updated, &nowUS); err != nil {
			return nil, fmt.Errorf("store: read breakers: %w", err)
		}
		r.OpenedAt, r.Until, r.UpdatedAt = time.UnixMicro(opened).UTC(), time.UnixMicro(until).UTC(), time.UnixMicro(updated).UTC()
		r.Remaining = time.Duration(until-nowUS) * time.Microsecond
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read breakers: %w", err)
	}
	return out, nil
}

// Breakers returns every stored breaker row (any state), by name; Remaining
// is zero. For status tools and tests.
func (db *DB) Breakers(ctx context.Context) ([]BreakerRow, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT name, state, failures, COALESCE(opened_us, 0), COALESCE(until_us, 0), origin, updated_us FROM breakers ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("store: read breakers: %w", err)
	}
	defer rows.Close()
	var out []BreakerRow
	for rows.Next() {
		var r BreakerRow
		var opened, until, updated int64
		if err := rows.Scan(&r.Name, &r.State, &r.Failures, &opened, &until, &r.Origin, &updated); err != nil {
			return nil, fmt.Errorf("store: read breakers: %w", err)
		}
		if opened != 0 {
			r.OpenedAt, r.Until = time.UnixMicro(opened).UTC(), time.UnixMicro(until).UTC()
		}
		r.UpdatedAt = time.UnixMicro(updated).UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}
