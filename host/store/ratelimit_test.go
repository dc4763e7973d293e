package store_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/store"
	"github.com/toolhost/toolhost/internal/pgtest"
)

// rateEngines opens a fresh store on each engine: an SQLite file and a
// PostgreSQL database of pgtest.
func rateEngines(t *testing.T) []struct {
	name string
	db   *store.DB
} {
	t.Helper()
	open := func(url string) *store.DB {
		db, err := store.Open(context.Background(), url, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	return []struct {
		name string
		db   *store.DB
	}{
		{"sqlite", open("sqlite://" + filepath.Join(t.TempDir(), "t.db"))},
		{"postgres", open(pgtest.URL(t))},
	}
}

// ageBucket moves the bucket's last update d into the past, as if d had
// passed (the bucket refills by the database clock).
func ageBucket(t *testing.T, db *store.DB, key string, d time.Duration) {
	t.Helper()
	q := "UPDATE rate_buckets SET updated_us = updated_us - ? WHERE key = ?"
	if db.Engine() == store.EnginePostgres {
		q = "UPDATE rate_buckets SET updated_us = updated_us - $1 WHERE key = $2"
	}
	if _, err := db.SQL().Exec(q, d.Microseconds(), key); err != nil {
		t.Fatal(err)
	}
}

// TestRateTakeBurstRefill: a bucket starts full (capacity tokens), refuses
// the next take with the wait until a token comes, refills by the
// database clock, never beyond its capacity, and a refused take changes
// nothing. Keys are data: one that reads like SQL stays a key.
func TestRateTakeBurstRefill(t *testing.T) {
	for _, e := range rateEngines(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			db := e.db
			key := "client:'; DROP TABLE rate_buckets; --"
			const capacity, perSec = 3, 1.0 // 3 at once, then one a second
			for i := range capacity {
				ok, _, err := db.RateTake(ctx, key, capacity, perSec)
				if err != nil || !ok {
					t.Fatalf("take %d: ok=%v err=%v", i+1, ok, err)
				}
			}
			ok, wait, err := db.RateTake(ctx, key, capacity, perSec)
			if err != nil || ok {
				t.Fatalf("take 4: ok=%v err=%v; want refused", ok, err)
			}
			if wait <= 0 || wait > time.Second {
				t.Fatalf("wait %v; want in (0, 1s]", wait)
			}
			// Another key is another bucket.
			if ok, _, err := db.RateTake(ctx, "client:other", capacity, perSec); !ok || err != nil {
				t.Fatalf("other key: ok=%v err=%v", ok, err)
			}
			// 1.5 s later: one token (and a half).
			ageBucket(t, db, key, 1500*time.Millisecond)
			if ok, _, err := db.RateTake(ctx, key, capacity, perSec); !ok || err != nil {
				t.Fatalf("after 1.5s: ok=%v err=%v", ok, err)
			}
			if ok, wait, _ := db.RateTake(ctx, key, capacity, perSec); ok || wait > 600*time.Millisecond {
				t.Fatalf("after the refilled token: ok=%v wait=%v; want refused, about 0.5s", ok, wait)
			}
			// An hour later: full, not 3600 tokens.
			ageBucket(t, db, key, time.Hour)
			for i := range capacity {
				if ok, _, err := db.RateTake(ctx, key, capacity, perSec); !ok || err != nil {
					t.Fatalf("after an hour, take %d: ok=%v err=%v", i+1, ok, err)
				}
			}
			if ok, _, _ := db.RateTake(ctx, key, capacity, perSec); ok {
				t.Fatal("after an hour: more than capacity taken")
			}
			// Given back: one more.
			if err := db.RateGive(ctx, key, capacity); err != nil {
				t.Fatal(err)
			}
			if ok, _, _ := db.RateTake(ctx, key, capacity, perSec); !ok {
				t.Fatal("the token given back was not there")
			}
			// The clock went back (an update in the future): no refill,
			// no negative tokens, refused with a finite wait.
			ageBucket(t, db, key, -time.Hour)
			if ok, wait, err := db.RateTake(ctx, key, capacity, perSec); ok || err != nil || wait <= 0 || wait > 2*time.Second {
				t.Fatalf("clock back: ok=%v wait=%v err=%v", ok, wait, err)
			}
			var n int
			if err := db.SQL().QueryRow("SELECT count(*) FROM rate_buckets").Scan(&n); err != nil || n != 2 {
				t.Fatalf("rate_buckets has %d rows (%v); want 2", n, err)
			}
		})
	}
}

// TestRateTakeConcurrent: 40 takes at once from a bucket of 10 that does
// not refill in the test's time take exactly 10 tokens (the take is one
// atomic statement), on both engines, over several connections.
func TestRateTakeConcurrent(t *testing.T) {
	for _, e := range rateEngines(t) {
		t.Run(e.name, func(t *testing.T) {
			var took atomic.Int32
			var wg sync.WaitGroup
			for range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, _, err := e.db.RateTake(context.Background(), "tool:x", 10, 1.0/3600)
					if err != nil {
						t.Error(err)
					}
					if ok {
						took.Add(1)
					}
				}()
			}
			wg.Wait()
			if n := took.Load(); n != 10 {
				t.Fatalf("%d takes succeeded; want 10", n)
			}
		})
	}
}

// TestRateTakeBounded: a take under a context already past its deadline
// fails at once with the context's error (the layer's bound).
func TestRateTakeBounded(t *testing.T) {
	for _, e := range rateEngines(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
			defer cancel()
			<-ctx.Done()
			if _, _, err := e.db.RateTake(ctx, "k", 1, 1); err == nil {
				t.Fatal("no error")
			}
		})
	}
}
