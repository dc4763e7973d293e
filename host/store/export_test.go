package store

import (
	"context"
	"time"
)

// SweepAuditChunked is SweepAudit with chunk rows per statement.
func (db *DB) SweepAuditChunked(ctx context.Context, before time.Time, chunk int) (int64, error) {
	return db.sweepAudit(ctx, before, chunk)
}

// OnSweepPause sets the function SweepAudit calls after each full chunk,
// until the test ends.
func OnSweepPause(t interface{ Cleanup(func()) }, f func()) {
	sweepPaused = f
	t.Cleanup(func() { sweepPaused = nil })
}
