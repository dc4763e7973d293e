package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/store"
	"github.com/toolhost/toolhost/internal/pgtest"
)

// engines opens a fresh store on each engine, for a table test.
func engines(t *testing.T) []struct {
	name string
	db   func(t *testing.T) *store.DB
} {
	open := func(url func(t *testing.T) string) func(t *testing.T) *store.DB {
		return func(t *testing.T) *store.DB {
			db, err := store.Open(context.Background(), url(t), store.Options{Replica: "test"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		}
	}
	return []struct {
		name string
		db   func(t *testing.T) *store.DB
	}{
		{"sqlite", open(func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "t.db") })},
		{"postgres", open(func(t *testing.T) string { return pgtest.URL(t) })},
	}
}

const hostile = `'; DROP TABLE audit; --`

func TestAuditInsertQueryPaging(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			db := e.db(t)
			base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			var rows []store.AuditRow
			// 1000 rows, many sharing a time (the cursor must break ties by id).
			for i := range 1000 {
				tool, client, outcome := "github__list", "alice", "ok"
				switch {
				case i%10 == 0:
					tool, client = hostile, hostile
				case i%7 == 0:
					tool, outcome = "fs_read[1]", "denied"
				case i%3 == 0:
					tool = "github__delete_repo"
				}
				rows = append(rows, store.AuditRow{
					Time: base.Add(time.Duration(i/4) * time.Millisecond), CorrelationID: fmt.Sprintf("c%04d", i),
					Client: client, Tool: tool, Outcome: outcome, Decision: "allow", Attempts: 1, LatencyMS: 1.5,
					Record: []byte(fmt.Sprintf(`{"n":%d}`, i)),
				})
			}
			if err := db.InsertAudit(ctx, rows); err != nil {
				t.Fatal(err)
			}
			// A batch retried with its ids (a lost commit acknowledgement).
			got, _, err := db.QueryAudit(ctx, store.AuditFilter{Limit: 1})
			if err != nil || len(got) != 1 {
				t.Fatal(got, err)
			}
			if err := db.InsertAudit(ctx, got); err != nil {
				t.Fatalf("a retried row must be skipped, not fail: %v", err)
			}
			// Paging: every row once, newest first.
			seen := map[string]bool{}
			cursor, pages := "", 0
			var prev *store.AuditRow
			for {
				page, next, err := db.QueryAudit(ctx, store.AuditFilter{Limit: 77, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				pages++
				for i := range page {
					r := &page[i]
					if seen[r.ID] {
						t.Fatalf("row %s twice", r.ID)
					}
					seen[r.ID] = true
					if prev != nil && (r.Time.After(prev.Time) || r.Time.Equal(prev.Time) && r.ID > prev.ID) {
						t.Fatalf("not newest first: %v %s after %v %s", r.Time, r.ID, prev.Time, prev.ID)
					}
					prev = r
				}
				if next == "" {
					break
				}
				cursor = next
			}
			if len(seen) != 1000 || pages != 13 {
				t.Fatalf("paging saw %d rows in %d pages, want 1000 in 13", len(seen), pages)
			}

			count := func(f store.AuditFilter) int {
				t.Helper()
				f.Limit = 1000
				rs, _, err := db.QueryAudit(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				return len(rs)
			}
			for _, c := range []struct {
				f    store.AuditFilter
				want int
			}{
				{store.AuditFilter{Tool: hostile}, 100},
				{store.AuditFilter{Client: hostile}, 100},
				{store.AuditFilter{Tool: "'*"}, 100},
				{store.AuditFilter{Tool: "github__*"}, 772},
				{store.AuditFilter{Tool: "github__delete_*"}, 257},
				{store.AuditFilter{Tool: "GITHUB__*"}, 0},      // case-sensitive on both engines
				{store.AuditFilter{Tool: "github%"}, 0},        // % is not special
				{store.AuditFilter{Tool: "github_\\_list"}, 0}, // nor _ or backslash
				{store.AuditFilter{Tool: "fs_read[1]"}, 128},   // [ is itself
				{store.AuditFilter{Tool: "fs_read[?]"}, 128},   // ? one character
				{store.AuditFilter{Outcome: "denied"}, 128},
				{store.AuditFilter{Outcome: "denied", Tool: "github*"}, 0},
				{store.AuditFilter{CorrelationID: "c0042"}, 1},
				{store.AuditFilter{Op: "tools/call"}, 1000},
				{store.AuditFilter{Op: "admin/restart"}, 0},
				{store.AuditFilter{Since: base.Add(200 * time.Millisecond)}, 200},
				{store.AuditFilter{Until: base.Add(1 * time.Millisecond)}, 4},
				{store.AuditFilter{Since: base.Add(1 * time.Millisecond), Until: base.Add(2 * time.Millisecond)}, 4},
			} {
				if n := count(c.f); n != c.want {
					t.Errorf("%+v: %d rows, want %d", c.f, n, c.want)
				}
			}
			r, _, _ := db.QueryAudit(ctx, store.AuditFilter{CorrelationID: "c0010"})
			if len(r) != 1 || r[0].Tool != hostile || r[0].Client != hostile || string(r[0].Record) != `{"n":10}` ||
				r[0].Replica != "test" || len(r[0].ID) != 32 || !r[0].Time.Equal(base.Add(2*time.Millisecond)) {
				t.Fatalf("row c0010: %+v", r)
			}
			// The table survived the hostile names.
			if n := count(store.AuditFilter{}); n != 1000 {
				t.Fatalf("%d rows after the hostile queries", n)
			}

			// Bad filters.
			for _, f := range []store.AuditFilter{{Limit: 1001}, {Limit: -1}, {Since: base, Until: base.Add(-time.Second)}} {
				if _, _, err := db.QueryAudit(ctx, f); !errors.Is(err, store.ErrFilter) {
					t.Errorf("%+v: %v, want ErrFilter", f, err)
				}
			}
			for _, c := range []string{"x", "12", "12.", "12.zz", "1.2' OR 1=1 --", hostile} {
				if _, _, err := db.QueryAudit(ctx, store.AuditFilter{Cursor: c}); !errors.Is(err, store.ErrCursor) {
					t.Errorf("cursor %q: %v, want ErrCursor", c, err)
				}
			}

			// Retention.
			n, err := db.SweepAudit(ctx, base.Add(100*time.Millisecond))
			if err != nil || n != 400 {
				t.Fatalf("sweep: %d %v, want 400", n, err)
			}
			if n := count(store.AuditFilter{}); n != 600 {
				t.Fatalf("%d rows after the sweep, want 600", n)
			}
		})
	}
}

// TestSweepAuditInChunks: a sweep in chunks deletes every row older than
// its bound (oldest first, chunk by chunk) and none younger; a sweep cut
// between chunks keeps what it deleted; and a write between two chunks
// gets the lock.
func TestSweepAuditInChunks(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			db := e.db(t)
			base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			var rows []store.AuditRow
			for i := range 257 {
				rows = append(rows, store.AuditRow{Time: base.Add(time.Duration(i) * time.Millisecond), Tool: "t", Record: []byte("{}")})
			}
			if err := db.InsertAudit(ctx, rows); err != nil {
				t.Fatal(err)
			}
			count := func() int {
				r, _, err := db.QueryAudit(ctx, store.AuditFilter{Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				return len(r)
			}
			// Between the first chunk and the second, another writer gets
			// the lock without waiting for the sweep (a 4 s deadline: room
			// for a busy machine, still under busy_timeout's 5 s, which a
			// write blocked by a held lock would wait out); then the sweep
			// is cut, and the first chunk's 50 rows stay deleted.
			cctx, cancel := context.WithCancel(ctx)
			pauses := 0
			store.OnSweepPause(t, func() {
				pauses++
				wctx, wcancel := context.WithTimeout(ctx, 4*time.Second)
				defer wcancel()
				if err := db.InsertAudit(wctx, []store.AuditRow{{Time: base.Add(time.Hour), Tool: "during", Record: []byte("{}")}}); err != nil {
					t.Errorf("a write between two chunks: %v", err)
				}
				cancel()
			})
			n, err := db.SweepAuditChunked(cctx, base.Add(200*time.Millisecond), 50)
			if !errors.Is(err, context.Canceled) || n != 50 || pauses != 1 || count() != 257-50+1 {
				t.Fatalf("cut sweep: %d deleted, %v, %d pauses, %d left; want 50, canceled, 1, %d", n, err, pauses, count(), 257-50+1)
			}
			// The oldest went first.
			left, _, _ := db.QueryAudit(ctx, store.AuditFilter{Until: base.Add(49 * time.Millisecond)})
			if len(left) != 0 {
				t.Fatalf("%d rows older than the deleted ones left", len(left))
			}
			// The rest, in chunks of 50 (the last short).
			store.OnSweepPause(t, func() { pauses++ })
			m, err := db.SweepAuditChunked(ctx, base.Add(200*time.Millisecond), 50)
			if err != nil || m != 150 || pauses != 4 || count() != 58 {
				t.Fatalf("sweep: %d deleted, %v, %d pauses, %d left; want 150, 4 pauses, 58 left", m, err, pauses, count())
			}
			// The default chunk, nothing left to delete.
			if m, err := db.SweepAudit(ctx, base.Add(200*time.Millisecond)); err != nil || m != 0 {
				t.Fatalf("sweep again: %d %v", m, err)
			}
		})
	}
}
