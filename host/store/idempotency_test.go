package store_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/store"
	"github.com/toolhost/toolhost/internal/pgtest"
	"github.com/toolhost/toolhost/internal/testutil"
)

// idemEngines returns, per engine, a function opening a second handle on
// the same database under another replica name (as a second toolhost
// would).
func idemEngines(t *testing.T) []struct {
	name string
	open func(t *testing.T, replica string) *store.DB
} {
	sqlite := "sqlite://" + filepath.Join(t.TempDir(), "idem.db")
	var pg string
	opener := func(url *string, lazy func() string) func(t *testing.T, replica string) *store.DB {
		return func(t *testing.T, replica string) *store.DB {
			if *url == "" {
				*url = lazy()
			}
			db, err := store.Open(context.Background(), *url, store.Options{Replica: replica})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		}
	}
	return []struct {
		name string
		open func(t *testing.T, replica string) *store.DB
	}{
		{"sqlite", opener(&sqlite, nil)},
		{"postgres", opener(&pg, func() string { return pgtest.URL(t) })},
	}
}

func claim(t *testing.T, db *store.DB, key, tool, hash string, lease time.Duration) store.IdemAnswer {
	t.Helper()
	a, err := db.ClaimIdempotency(context.Background(), store.IdemClaim{Key: key, Tool: tool, ArgsHash: hash, Lease: lease})
	if err != nil {
		t.Fatalf("claim %q: %v", key, err)
	}
	return a
}

func TestIdempotencyClaimCompleteReplay(t *testing.T) {
	for _, e := range idemEngines(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			a, b := e.open(t, "a"), e.open(t, "b")
			// Adversarial key and tool: parameters only, never SQL text.
			key := "client:5:alice:'; DROP TABLE idempotency; --"
			tool := "x'); DELETE FROM idempotency; --"
			first := claim(t, a, key, tool, "h1", time.Minute)
			if first.Status != store.IdemClaimed || first.Token == "" {
				t.Fatalf("first claim: %+v", first)
			}
			// Same key and arguments from another replica while running.
			if r := claim(t, b, key, tool, "h1", time.Minute); r.Status != store.IdemRunning || r.Owner != "a" || r.ExpiresIn <= 0 || r.ExpiresIn > time.Minute {
				t.Fatalf("duplicate while running: %+v", r)
			}
			// Other arguments, or another tool: a conflict naming the first tool.
			if r := claim(t, b, key, tool, "h2", time.Minute); r.Status != store.IdemConflict || r.Tool != tool {
				t.Fatalf("other args: %+v", r)
			}
			if r := claim(t, b, key, "other", "h1", time.Minute); r.Status != store.IdemConflict || r.Tool != tool {
				t.Fatalf("other tool: %+v", r)
			}
			// Only the owner's token completes it.
			if ok, err := b.CompleteIdempotency(ctx, key, first.Token, []byte(`{"x":1}`), time.Hour); err != nil || ok {
				t.Fatalf("complete by another replica: %v %v", ok, err)
			}
			result := `{"content":[{"type":"text","text":"it's \"done\" – ✓"}]}`
			if ok, err := a.CompleteIdempotency(ctx, key, first.Token, []byte(result), time.Hour); err != nil || !ok {
				t.Fatalf("complete: %v %v", ok, err)
			}
			r := claim(t, b, key, tool, "h1", time.Minute)
			if r.Status != store.IdemDone || string(r.Result) != result || r.ExpiresIn < 59*time.Minute {
				t.Fatalf("duplicate after done: %+v", r)
			}
			if r := claim(t, b, key, tool, "h2", time.Minute); r.Status != store.IdemConflict {
				t.Fatalf("other args after done: %+v", r)
			}
			// The table is still there, with its one row.
			var n int
			if err := a.SQL().QueryRow("SELECT count(*) FROM idempotency").Scan(&n); err != nil || n != 1 {
				t.Fatalf("rows %d %v", n, err)
			}
		})
	}
}

func TestIdempotencyReleaseFreesKey(t *testing.T) {
	for _, e := range idemEngines(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			db := e.open(t, "a")
			first := claim(t, db, "k", "t", "h", time.Minute)
			// A release with a wrong token leaves the claim.
			if err := db.ReleaseIdempotency(ctx, "k", "nottoken"); err != nil {
				t.Fatal(err)
			}
			if r := claim(t, db, "k", "t", "h", time.Minute); r.Status != store.IdemRunning {
				t.Fatalf("after a wrong release: %+v", r)
			}
			if err := db.ReleaseIdempotency(ctx, "k", first.Token); err != nil {
				t.Fatal(err)
			}
			// Free again, even for other arguments.
			second := claim(t, db, "k", "t", "other", time.Minute)
			if second.Status != store.IdemClaimed || second.Token == first.Token {
				t.Fatalf("after release: %+v", second)
			}
			// The first owner can no longer complete it.
			if ok, err := db.CompleteIdempotency(ctx, "k", first.Token, []byte("{}"), time.Hour); err != nil || ok {
				t.Fatalf("stale complete: %v %v", ok, err)
			}
		})
	}
}

func TestIdempotencyConcurrentClaims(t *testing.T) {
	for _, e := range idemEngines(t) {
		t.Run(e.name, func(t *testing.T) {
			dbs := []*store.DB{e.open(t, "a"), e.open(t, "b")}
			var wg sync.WaitGroup
			answers := make([]store.IdemAnswer, 10)
			errs := make([]error, 10)
			for i := range answers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					answers[i], errs[i] = dbs[i%2].ClaimIdempotency(context.Background(),
						store.IdemClaim{Key: "race", Tool: "t", ArgsHash: "h", Lease: time.Minute})
				}()
			}
			wg.Wait()
			claimed := 0
			for i, a := range answers {
				if errs[i] != nil {
					t.Fatalf("claim %d: %v", i, errs[i])
				}
				switch a.Status {
				case store.IdemClaimed:
					claimed++
				case store.IdemRunning:
				default:
					t.Fatalf("claim %d: %+v", i, a)
				}
			}
			if claimed != 1 {
				t.Fatalf("%d claims succeeded, want exactly 1", claimed)
			}
		})
	}
}

func TestIdempotencyExpiry(t *testing.T) {
	for _, e := range idemEngines(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			a, b := e.open(t, "a"), e.open(t, "b")
			// A stale claim (its owner's lease passed) is taken over.
			stale := claim(t, a, "stale", "t", "h", time.Millisecond)
			var took store.IdemAnswer
			testutil.Eventually(t, 10*time.Second, func() bool {
				took = claim(t, b, "stale", "t", "h", time.Minute)
				return took.Status == store.IdemClaimed
			}, "a stale claim was never taken over")
			if ok, _ := a.CompleteIdempotency(ctx, "stale", stale.Token, []byte("{}"), time.Hour); ok {
				t.Fatal("the stale owner completed a claim taken over")
			}
			// A result past its TTL is gone: the key runs again, with any arguments.
			first := claim(t, a, "ttl", "t", "h", time.Minute)
			if ok, err := a.CompleteIdempotency(ctx, "ttl", first.Token, []byte(`{"n":1}`), time.Millisecond); err != nil || !ok {
				t.Fatal(ok, err)
			}
			testutil.Eventually(t, 10*time.Second, func() bool {
				return claim(t, b, "ttl", "t", "h2", time.Minute).Status == store.IdemClaimed
			}, "an expired result was never released")
			// The sweep deletes expired rows and keeps live ones.
			live := claim(t, a, "live", "t", "h", time.Hour)
			if ok, err := a.CompleteIdempotency(ctx, "live", live.Token, []byte("{}"), time.Hour); err != nil || !ok {
				t.Fatal(ok, err)
			}
			claim(t, a, "short", "t", "h", time.Millisecond)
			testutil.Eventually(t, 10*time.Second, func() bool {
				n, err := a.SweepIdempotency(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return n >= 1
			}, "the sweep deleted nothing")
			if r := claim(t, b, "live", "t", "h", time.Minute); r.Status != store.IdemDone {
				t.Fatalf("the sweep took a live result: %+v", r)
			}
		})
	}
}
