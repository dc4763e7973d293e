package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/host/store"
	"github.com/toolhost/toolhost/internal/pgtest"
)

// pinEngines opens a fresh store on each engine.
func pinEngines(t *testing.T) map[string]*store.DB {
	t.Helper()
	out := map[string]*store.DB{}
	for name, url := range map[string]string{
		"sqlite":   "sqlite://" + filepath.Join(t.TempDir(), "pins.db"),
		"postgres": pgtest.URL(t),
	} {
		db, err := store.Open(context.Background(), url, store.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() { db.Close() })
		out[name] = db
	}
	return out
}

func pinOf(t *testing.T, db *store.DB, tool string) *store.Pin {
	t.Helper()
	ps, err := db.Pins(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := range ps {
		if ps[i].Tool == tool {
			return &ps[i]
		}
	}
	return nil
}

// TestPinsLifecycle: trust on first sight, a change waits, approval makes
// it the pin; names that look like SQL are data.
func TestPinsLifecycle(t *testing.T) {
	ctx := context.Background()
	for engine, db := range pinEngines(t) {
		t.Run(engine, func(t *testing.T) {
			tool := "x__'; DROP TABLE tool_pins; --"
			ok, err := db.PinFirst(ctx, tool, "b'--", "h1", `{"a":1}`, "trust-first")
			if err != nil || !ok {
				t.Fatalf("first pin: %v %v", ok, err)
			}
			if ok, err := db.PinFirst(ctx, tool, "b'--", "h9", `{}`, "trust-first"); err != nil || ok {
				t.Fatalf("second first pin wrote: %v %v", ok, err)
			}
			p := pinOf(t, db, tool)
			if p == nil || p.Hash != "h1" || p.Definition != `{"a":1}` || !p.Approved() || p.Pending() || p.ApprovedAt.IsZero() || p.ApprovedBy != "trust-first" || p.Backend != "b'--" {
				t.Fatalf("pin: %+v", p)
			}
			if err := db.SetPending(ctx, tool, "b'--", "h2", `{"a":2}`); err != nil {
				t.Fatal(err)
			}
			p = pinOf(t, db, tool)
			since := p.PendingSince
			if p.Hash != "h1" || p.PendingHash != "h2" || p.PendingDefinition != `{"a":2}` || since.IsZero() {
				t.Fatalf("pending: %+v", p)
			}
			// The same pending definition again keeps its time.
			if err := db.SetPending(ctx, tool, "b'--", "h2", `{"a":2}`); err != nil {
				t.Fatal(err)
			}
			if p = pinOf(t, db, tool); !p.PendingSince.Equal(since) {
				t.Fatalf("pending_since moved: %v -> %v", since, p.PendingSince)
			}
			// Approving another hash than the one waiting does nothing.
			if ok, err := db.ApprovePin(ctx, tool, "h3", "alice"); err != nil || ok {
				t.Fatalf("approve of a stale hash: %v %v", ok, err)
			}
			if ok, err := db.ApprovePin(ctx, tool, "h2", "alice"); err != nil || !ok {
				t.Fatalf("approve: %v %v", ok, err)
			}
			p = pinOf(t, db, tool)
			if p.Hash != "h2" || p.Definition != `{"a":2}` || p.Pending() || p.ApprovedBy != "alice" {
				t.Fatalf("approved: %+v", p)
			}
			if ok, err := db.ApprovePin(ctx, tool, "", "alice"); err != nil || ok {
				t.Fatalf("approve with nothing waiting: %v %v", ok, err)
			}
			// A revert to the pinned definition clears what waits.
			if err := db.SetPending(ctx, tool, "b'--", "h4", `{}`); err != nil {
				t.Fatal(err)
			}
			if err := db.ClearPending(ctx, tool, "h2"); err != nil {
				t.Fatal(err)
			}
			if p = pinOf(t, db, tool); p.Pending() || p.Hash != "h2" {
				t.Fatalf("after clear: %+v", p)
			}
			var n int
			if err := db.SQL().QueryRow("SELECT count(*) FROM tool_pins").Scan(&n); err != nil || n != 1 {
				t.Fatalf("rows %d %v", n, err)
			}
		})
	}
}

// TestPinsApproveMode: a tool first seen waiting has no approved
// definition until approved.
func TestPinsApproveMode(t *testing.T) {
	ctx := context.Background()
	for engine, db := range pinEngines(t) {
		t.Run(engine, func(t *testing.T) {
			if err := db.SetPending(ctx, "a__t", "a", "h1", `{"d":1}`); err != nil {
				t.Fatal(err)
			}
			p := pinOf(t, db, "a__t")
			if p.Approved() || !p.Pending() || !p.ApprovedAt.IsZero() {
				t.Fatalf("waiting: %+v", p)
			}
			// trust-first does not take over a tool that waits.
			if ok, err := db.PinFirst(ctx, "a__t", "a", "h1", `{"d":1}`, "trust-first"); err != nil || ok {
				t.Fatalf("PinFirst over a waiting tool: %v %v", ok, err)
			}
			if ok, err := db.ApprovePin(ctx, "a__t", "", "bob"); err != nil || !ok {
				t.Fatalf("approve: %v %v", ok, err)
			}
			if p = pinOf(t, db, "a__t"); !p.Approved() || p.Hash != "h1" || p.ApprovedBy != "bob" {
				t.Fatalf("approved: %+v", p)
			}
		})
	}
}
