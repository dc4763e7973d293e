package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Tool-definition pins (table tool_pins; issue 25, item 6). A row holds the
// approved definition of one catalogue tool (hash and definition) and, when
// the backend now offers another one, that one waiting for approval
// (pending_*). A tool seen first under pin = "approve" has a row with no
// approved definition yet: its hash and definition are "" and approved_us
// is 0 (Pin.Approved reports false).

// Pin is one row of tool_pins.
type Pin struct {
	Tool    string // catalogue name
	Backend string
	// Hash is the hex SHA-256 of Definition, the approved definition as
	// canonical JSON; both "" while the tool was never approved.
	Hash       string
	Definition string
	ApprovedAt time.Time // zero while never approved (database clock)
	ApprovedBy string    // "trust-first", or who ran toolhost approve
	// PendingHash and PendingDefinition are the definition the backend
	// offers now when it differs from the approved one ("" when none
	// waits); PendingSince is when it was first seen (database clock).
	PendingHash       string
	PendingDefinition string
	PendingSince      time.Time
}

// Approved reports whether the tool has an approved definition.
func (p *Pin) Approved() bool { return p.Hash != "" }

// Pending reports whether a definition waits for approval.
func (p *Pin) Pending() bool { return p.PendingHash != "" }

const pinColumns = "tool, backend, hash, definition, approved_us, approved_by, pending_hash, pending_definition, pending_since_us"

// Pins returns every pin, sorted by tool. Errors are the engine's.
func (db *DB) Pins(ctx context.Context) ([]Pin, error) {
	rows, err := db.sql.QueryContext(ctx, "SELECT "+pinColumns+" FROM tool_pins ORDER BY tool")
	if err != nil {
		return nil, fmt.Errorf("store: pins: %w", err)
	}
	defer rows.Close()
	var out []Pin
	for rows.Next() {
		var p Pin
		var approved int64
		var ph, pd sql.NullString
		var since sql.NullInt64
		if err := rows.Scan(&p.Tool, &p.Backend, &p.Hash, &p.Definition, &approved, &p.ApprovedBy, &ph, &pd, &since); err != nil {
			return nil, fmt.Errorf("store: pins: %w", err)
		}
		if approved > 0 {
			p.ApprovedAt = time.UnixMicro(approved).UTC()
		}
		p.PendingHash, p.PendingDefinition = ph.String, pd.String
		if since.Valid {
			p.PendingSince = time.UnixMicro(since.Int64).UTC()
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: pins: %w", err)
	}
	return out, nil
}

// PinFirst pins tool's definition (hash, def) as approved by by, unless the
// tool already has a row (pinned, or waiting for approval): trust on first
// sight. It reports whether it wrote the row; when it did not, another
// process (or an earlier run) got there first and the caller reads what is
// stored (Pins).
func (db *DB) PinFirst(ctx context.Context, tool, backend, hash, def, by string) (bool, error) {
	res, err := db.sql.ExecContext(ctx, db.q("INSERT INTO tool_pins (tool, backend, hash, definition, approved_us, approved_by) VALUES (?, ?, ?, ?, "+
		db.nowMicros()+", ?) ON CONFLICT (tool) DO NOTHING"), tool, backend, hash, def, by)
	if err != nil {
		return false, fmt.Errorf("store: pin %q: %w", tool, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// SetPending records that backend now offers tool with the definition
// (hash, def), which differs from the approved one (or the tool has none):
// it waits for approval. A row is made for a tool never seen (with no
// approved definition); PendingSince is kept while the same definition
// keeps waiting.
func (db *DB) SetPending(ctx context.Context, tool, backend, hash, def string) error {
	_, err := db.sql.ExecContext(ctx, db.q("INSERT INTO tool_pins (tool, backend, hash, definition, approved_us, approved_by, pending_hash, pending_definition, pending_since_us)"+
		" VALUES (?, ?, '', '', 0, '', ?, ?, "+db.nowMicros()+")"+
		" ON CONFLICT (tool) DO UPDATE SET backend = excluded.backend, pending_hash = excluded.pending_hash,"+
		" pending_definition = excluded.pending_definition, pending_since_us = excluded.pending_since_us"+
		" WHERE tool_pins.pending_hash IS NULL OR tool_pins.pending_hash <> excluded.pending_hash"), tool, backend, hash, def)
	if err != nil {
		return fmt.Errorf("store: pin %q: %w", tool, err)
	}
	return nil
}

// ClearPending forgets the definition waiting for tool's approval when the
// backend offers the approved one (hash) again.
func (db *DB) ClearPending(ctx context.Context, tool, hash string) error {
	_, err := db.sql.ExecContext(ctx, db.q("UPDATE tool_pins SET pending_hash = NULL, pending_definition = NULL, pending_since_us = NULL"+
		" WHERE tool = ? AND hash = ? AND pending_hash IS NOT NULL"), tool, hash)
	if err != nil {
		return fmt.Errorf("store: pin %q: %w", tool, err)
	}
	return nil
}

// ApprovePin makes the definition waiting for tool's approval its pin,
// approved by by now (database clock). When pendingHash is not "", only
// that definition is approved (the one the operator reviewed: a definition
// that changed again meanwhile is not). It reports whether a definition
// was approved (false: none waits, or another one does).
func (db *DB) ApprovePin(ctx context.Context, tool, pendingHash, by string) (bool, error) {
	q := "UPDATE tool_pins SET hash = pending_hash, definition = pending_definition, approved_us = " + db.nowMicros() +
		", approved_by = ?, pending_hash = NULL, pending_definition = NULL, pending_since_us = NULL WHERE tool = ? AND pending_hash IS NOT NULL"
	args := []any{by, tool}
	if pendingHash != "" {
		q += " AND pending_hash = ?"
		args = append(args, pendingHash)
	}
	res, err := db.sql.ExecContext(ctx, db.q(q), args...)
	if err != nil {
		return false, fmt.Errorf("store: approve %q: %w", tool, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}
