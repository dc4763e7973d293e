package store_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/store"
	"github.com/toolhost/toolhost/internal/pgtest"
)

// engines opens a fresh store on each engine: a SQLite file and a
// PostgreSQL database (pgtest).
func breakerEngines(t *testing.T) []struct {
	name string
	url  func(t *testing.T) string
} {
	return []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "toolhost.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.URL(t) }},
	}
}

// TestBreakersSaveAndLoad: an open breaker is live until its open period
// ends by the database's clock; closing it clears it; names that look like
// SQL are stored as data.
func TestBreakersSaveAndLoad(t *testing.T) {
	for _, e := range breakerEngines(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			db, err := store.Open(ctx, e.url(t), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			evil := "tool:'; DROP TABLE breakers; --"
			if err := db.SaveBreaker(ctx, evil, store.BreakerOpen, 5, time.Hour, "r1#a"); err != nil {
				t.Fatal(err)
			}
			if err := db.SaveBreaker(ctx, "backend:short", store.BreakerOpen, 2, time.Millisecond, "r1#a"); err != nil {
				t.Fatal(err)
			}
			if err := db.SaveBreaker(ctx, "backend:half", store.BreakerHalfOpen, 0, time.Hour, "r2#b"); err != nil {
				t.Fatal(err)
			}
			if err := db.SaveBreaker(ctx, "x", "bogus", 0, 0, ""); err == nil {
				t.Fatal("unknown state accepted")
			}
			// The short one's period ends 1ms after it was written; wait
			// until the database's clock says so.
			dl := time.Now().Add(10 * time.Second)
			var live []store.BreakerRow
			for {
				live, err = db.LiveOpenBreakers(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(live) == 1 || time.Now().After(dl) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if len(live) != 1 || live[0].Name != evil || live[0].Failures != 5 || live[0].Origin != "r1#a" {
				t.Fatalf("live opens: %+v", live)
			}
			r := live[0]
			if r.Remaining <= 59*time.Minute || r.Remaining > time.Hour {
				t.Fatalf("remaining %v, want about 1h", r.Remaining)
			}
			if got := r.Until.Sub(r.OpenedAt); got != time.Hour {
				t.Fatalf("open period %v, want 1h", got)
			}
			// Closing it (by another replica) ends it at once.
			if err := db.SaveBreaker(ctx, evil, store.BreakerClosed, 0, time.Hour, "r2#b"); err != nil {
				t.Fatal(err)
			}
			if live, err = db.LiveOpenBreakers(ctx); err != nil || len(live) != 0 {
				t.Fatalf("after close: %+v %v", live, err)
			}
			all, err := db.Breakers(ctx)
			if err != nil || len(all) != 3 {
				t.Fatalf("all rows: %+v %v (the table must still be there)", all, err)
			}
			for _, r := range all {
				if r.Name == evil && (r.State != store.BreakerClosed || !r.Until.IsZero() || r.Origin != "r2#b") {
					t.Fatalf("closed row: %+v", r)
				}
			}
		})
	}
}
