package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/store"
	"github.com/toolhost/toolhost/internal/pgtest"
	"github.com/toolhost/toolhost/internal/testutil"
)

// grantEngine is one engine the grant tests run on: url opens a fresh
// database of it.
type grantEngine struct {
	name string
	url  func(t *testing.T) string
}

var grantEngines = []grantEngine{
	{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "toolhost.db") }},
	{"postgres", func(t *testing.T) string { return pgtest.URL(t) }},
}

// forGrantEngines runs f on a fresh store of each engine.
func forGrantEngines(t *testing.T, f func(t *testing.T, url string, db *store.DB)) {
	for _, e := range grantEngines {
		t.Run(e.name, func(t *testing.T) {
			url := e.url(t)
			db, err := store.Open(context.Background(), url, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			f(t, url, db)
		})
	}
}

func mustGrant(t *testing.T, db *store.DB, g store.NewGrant) *store.Grant {
	t.Helper()
	got, err := db.CreateGrant(context.Background(), g)
	if err != nil {
		t.Fatalf("CreateGrant(%+v): %v", g, err)
	}
	return got
}

func consume(t *testing.T, db *store.DB, tool string, subjects ...store.Subject) string {
	t.Helper()
	id, err := db.ConsumeGrant(context.Background(), subjects, tool)
	if err != nil {
		t.Fatalf("ConsumeGrant(%v, %q): %v", subjects, tool, err)
	}
	return id
}

var alice = store.Subject{Kind: store.SubjectClient, Name: "alice"}

func TestGrantCreateListRevoke(t *testing.T) {
	forGrantEngines(t, func(t *testing.T, _ string, db *store.DB) {
		ctx := context.Background()
		before, _ := db.Now(ctx)
		g := mustGrant(t, db, store.NewGrant{SubjectKind: "client", Subject: "alice", Tool: "github__delete_repo", TTL: 15 * time.Minute, Uses: 2, CreatedBy: "ops", Reason: "cleanup"})
		after, _ := db.Now(ctx)
		if len(g.ID) != 16 || g.UsesLeft == nil || *g.UsesLeft != 2 || g.Revoked != nil || g.CreatedBy != "ops" || g.Reason != "cleanup" {
			t.Fatalf("created %+v", g)
		}
		// The database's clock, not this process's: created is between two
		// readings of it, and expires is exactly created + ttl.
		if g.Created.Before(before) || g.Created.After(after) || g.Expires.Sub(g.Created) != 15*time.Minute {
			t.Fatalf("created %s expires %s; db clock read %s and %s", g.Created, g.Expires, before, after)
		}
		unlimited := mustGrant(t, db, store.NewGrant{SubjectKind: "profile", Subject: "review", Tool: "fs__*", TTL: time.Hour})
		if unlimited.UsesLeft != nil {
			t.Fatalf("uses 0 must be unlimited: %+v", unlimited)
		}
		list, err := db.ListGrants(ctx, false)
		if err != nil || len(list) != 2 {
			t.Fatalf("list: %v %v", list, err)
		}
		r, err := db.RevokeGrant(ctx, g.ID)
		if err != nil || r.Revoked == nil || r.ID != g.ID {
			t.Fatalf("revoke: %+v %v", r, err)
		}
		if _, err := db.RevokeGrant(ctx, g.ID); !errors.Is(err, store.ErrNoGrant) {
			t.Fatalf("second revoke: %v, want ErrNoGrant", err)
		}
		if _, err := db.RevokeGrant(ctx, "nosuchgrant"); !errors.Is(err, store.ErrNoGrant) {
			t.Fatalf("revoke of an unknown id: %v, want ErrNoGrant", err)
		}
		if id := consume(t, db, "github__delete_repo", alice); id != "" {
			t.Fatalf("a revoked grant was spent: %s", id)
		}
		live, _ := db.ListGrants(ctx, false)
		all, _ := db.ListGrants(ctx, true)
		if len(live) != 1 || live[0].ID != unlimited.ID || len(all) != 2 {
			t.Fatalf("live %v all %v", live, all)
		}
		got, err := db.GetGrant(ctx, g.ID)
		if err != nil || got.Revoked == nil {
			t.Fatalf("get: %+v %v", got, err)
		}
	})
}

func TestGrantUsesExhausted(t *testing.T) {
	forGrantEngines(t, func(t *testing.T, _ string, db *store.DB) {
		g := mustGrant(t, db, store.NewGrant{SubjectKind: "client", Subject: "alice", Tool: "github__delete_repo", TTL: time.Hour, Uses: 2})
		for i := range 2 {
			if id := consume(t, db, "github__delete_repo", alice); id != g.ID {
				t.Fatalf("use %d: %q, want %s", i+1, id, g.ID)
			}
		}
		if id := consume(t, db, "github__delete_repo", alice); id != "" {
			t.Fatalf("a third use of a two-use grant: %s", id)
		}
		got, _ := db.GetGrant(context.Background(), g.ID)
		if *got.UsesLeft != 0 {
			t.Fatalf("uses left %d", *got.UsesLeft)
		}
	})
}

func TestGrantSubjectsAndGlobs(t *testing.T) {
	forGrantEngines(t, func(t *testing.T, _ string, db *store.DB) {
		bob := store.Subject{Kind: "client", Name: "bob"}
		review := store.Subject{Kind: "profile", Name: "review"}
		aliceProfile := store.Subject{Kind: "profile", Name: "alice"}
		mustGrant(t, db, store.NewGrant{SubjectKind: "client", Subject: "bob", Tool: "github__delete_repo", TTL: time.Hour})
		if id := consume(t, db, "github__delete_repo", alice); id != "" {
			t.Fatal("bob's grant was spent by alice")
		}
		// A profile named like the client is another subject.
		mustGrant(t, db, store.NewGrant{SubjectKind: "profile", Subject: "alice", Tool: "github__delete_repo", TTL: time.Hour})
		if id := consume(t, db, "github__delete_repo", alice); id != "" {
			t.Fatal("profile alice's grant was spent by client alice")
		}
		if id := consume(t, db, "github__delete_repo", aliceProfile); id == "" {
			t.Fatal("profile alice's grant not found")
		}
		g := mustGrant(t, db, store.NewGrant{SubjectKind: "profile", Subject: "review", Tool: "github__delete_*", TTL: time.Hour})
		if id := consume(t, db, "github__delete_issue", alice, review); id != g.ID {
			t.Fatalf("glob grant of the caller's profile: %q", id)
		}
		if id := consume(t, db, "github__create_issue", alice, review); id != "" {
			t.Fatalf("a glob that does not match was spent: %q", id)
		}
		if id := consume(t, db, "github__delete_repo", bob); id == "" {
			t.Fatal("bob's own grant not found")
		}
		if id := consume(t, db, "github__delete_repo"); id != "" {
			t.Fatal("no subject must find no grant")
		}
	})
}

// TestGrantPrefersUnlimited: a single-use grant is kept while one of any
// number of uses applies.
func TestGrantPrefersUnlimited(t *testing.T) {
	forGrantEngines(t, func(t *testing.T, _ string, db *store.DB) {
		once := mustGrant(t, db, store.NewGrant{SubjectKind: "client", Subject: "alice", Tool: "x__y", TTL: time.Minute, Uses: 1})
		many := mustGrant(t, db, store.NewGrant{SubjectKind: "client", Subject: "alice", Tool: "x__*", TTL: time.Hour})
		for range 3 {
			if id := consume(t, db, "x__y", alice); id != many.ID {
				t.Fatalf("spent %q, want the unlimited %s", id, many.ID)
			}
		}
		if g, _ := db.GetGrant(context.Background(), once.ID); *g.UsesLeft != 1 {
			t.Fatalf("the single-use grant was spent: %+v", g)
		}
	})
}

// TestGrantExpiresByDatabaseClock: a grant expires when the database's
// clock passes its expiry; nothing this process passes (its own clock,
// which may be ahead or behind) takes part.
func TestGrantExpiresByDatabaseClock(t *testing.T) {
	forGrantEngines(t, func(t *testing.T, _ string, db *store.DB) {
		ctx := context.Background()
		g := mustGrant(t, db, store.NewGrant{SubjectKind: "client", Subject: "alice", Tool: "x__y", TTL: 50 * time.Millisecond})
		testutil.Eventually(t, 10*time.Second, func() bool {
			now, err := db.Now(ctx)
			return err == nil && now.After(g.Expires)
		}, "the database clock never passed the expiry")
		if id := consume(t, db, "x__y", alice); id != "" {
			t.Fatalf("an expired grant was spent: %s", id)
		}
		if live, _ := db.ListGrants(ctx, false); len(live) != 0 {
			t.Fatalf("an expired grant is listed as live: %v", live)
		}
	})
}

// TestGrantClockSkew: a replica whose clock is an hour ahead makes (and
// checks) grants like any other: the expiry is the database's now + ttl,
// never the replica's. Its clock is simulated by what it would have sent:
// nothing, since no query takes a time from the process; the test checks
// the expiry against the database's own clock, as two replicas see it.
func TestGrantClockSkew(t *testing.T) {
	forGrantEngines(t, func(t *testing.T, url string, db *store.DB) {
		ctx := context.Background()
		ahead, err := store.Open(ctx, url, store.Options{Replica: "ahead"})
		if err != nil {
			t.Fatal(err)
		}
		defer ahead.Close()
		dbNow, _ := db.Now(ctx)
		g, err := ahead.CreateGrant(ctx, store.NewGrant{SubjectKind: "client", Subject: "alice", Tool: "x__y", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if g.Expires.After(dbNow.Add(time.Minute + 30*time.Second)) {
			t.Fatalf("expiry %s is beyond the database's now %s + ttl", g.Expires, dbNow)
		}
		// Expire it by the database's clock: moving expires_us to the
		// database's past is what a minute passing would do.
		if _, err := db.SQL().ExecContext(ctx, rebind(db, "UPDATE grants SET expires_us = expires_us - 120000000 WHERE id = ?"), g.ID); err != nil {
			t.Fatal(err)
		}
		for _, r := range []*store.DB{db, ahead} {
			if id := consume(t, r, "x__y", alice); id != "" {
				t.Fatalf("replica %s spent a grant the database says expired", r.Replica())
			}
		}
	})
}

// rebind writes ? as $1 for PostgreSQL (tests' own queries: one parameter).
func rebind(db *store.DB, q string) string {
	if db.Engine() == store.EnginePostgres {
		for i := 0; i < len(q); i++ {
			if q[i] == '?' {
				return q[:i] + "$1" + q[i+1:]
			}
		}
	}
	return q
}

// TestGrantHostileNames: subjects, tools and reasons made to break SQL
// are stored and matched as the text they are.
func TestGrantHostileNames(t *testing.T) {
	forGrantEngines(t, func(t *testing.T, _ string, db *store.DB) {
		ctx := context.Background()
		evil := "'; DROP TABLE grants; --"
		g := mustGrant(t, db, store.NewGrant{SubjectKind: "client", Subject: evil, Tool: "x__y", TTL: time.Hour, Reason: evil, CreatedBy: `"); DELETE FROM grants; --`})
		if id := consume(t, db, "x__y", store.Subject{Kind: "client", Name: evil}); id != g.ID {
			t.Fatalf("hostile subject: %q", id)
		}
		if id := consume(t, db, "x__y", store.Subject{Kind: "client", Name: "' OR '1'='1"}); id != "" {
			t.Fatalf("an injected subject matched: %q", id)
		}
		if _, err := db.CreateGrant(ctx, store.NewGrant{SubjectKind: evil, Subject: "a", Tool: "x", TTL: time.Hour}); !errors.Is(err, store.ErrBadGrant) {
			t.Fatalf("hostile subject kind: %v", err)
		}
		list, err := db.ListGrants(ctx, true)
		if err != nil || len(list) != 1 || list[0].Subject != evil || list[0].Reason != evil {
			t.Fatalf("after hostile names: %+v %v", list, err)
		}
		if _, err := db.RevokeGrant(ctx, "' OR '1'='1"); !errors.Is(err, store.ErrNoGrant) {
			t.Fatalf("injected revoke: %v", err)
		}
		if live, _ := db.ListGrants(ctx, false); len(live) != 1 {
			t.Fatal("an injected id revoked a grant")
		}
	})
}

func TestGrantBadInput(t *testing.T) {
	db, err := store.Open(context.Background(), "sqlite::memory:", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	long := string(make([]byte, 2000))
	for name, g := range map[string]store.NewGrant{
		"kind":        {SubjectKind: "user", Subject: "a", Tool: "x", TTL: time.Hour},
		"no subject":  {SubjectKind: "client", Tool: "x", TTL: time.Hour},
		"no tool":     {SubjectKind: "client", Subject: "a", TTL: time.Hour},
		"bad glob":    {SubjectKind: "client", Subject: "a", Tool: "x__[", TTL: time.Hour},
		"zero ttl":    {SubjectKind: "client", Subject: "a", Tool: "x"},
		"negative":    {SubjectKind: "client", Subject: "a", Tool: "x", TTL: -time.Second},
		"ttl > year":  {SubjectKind: "client", Subject: "a", Tool: "x", TTL: 400 * 24 * time.Hour},
		"uses < 0":    {SubjectKind: "client", Subject: "a", Tool: "x", TTL: time.Hour, Uses: -1},
		"long reason": {SubjectKind: "client", Subject: "a", Tool: "x", TTL: time.Hour, Reason: long},
		"bad utf8":    {SubjectKind: "client", Subject: "\xff", Tool: "x", TTL: time.Hour},
	} {
		if _, err := db.CreateGrant(context.Background(), g); !errors.Is(err, store.ErrBadGrant) {
			t.Errorf("%s: %v, want ErrBadGrant", name, err)
		}
	}
}

// TestGrantConcurrentConsumers: replicas (separate connection pools on one
// PostgreSQL database) racing for a grant's uses spend exactly as many as
// it has.
func TestGrantConcurrentConsumers(t *testing.T) {
	for _, e := range grantEngines {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			url := e.url(t)
			var replicas []*store.DB
			for i := range 3 {
				db, err := store.Open(ctx, url, store.Options{Replica: "r" + string(rune('0'+i))})
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				replicas = append(replicas, db)
			}
			for _, uses := range []int{1, 5} {
				g := mustGrant(t, replicas[0], store.NewGrant{SubjectKind: "client", Subject: "alice", Tool: "t__once", TTL: time.Hour, Uses: uses})
				const consumers = 24
				var (
					wg    sync.WaitGroup
					mu    sync.Mutex
					spent int
					errs  []error
				)
				start := make(chan struct{})
				for i := range consumers {
					wg.Add(1)
					go func(db *store.DB) {
						defer wg.Done()
						<-start
						id, err := db.ConsumeGrant(ctx, []store.Subject{alice}, "t__once")
						mu.Lock()
						defer mu.Unlock()
						if err != nil {
							errs = append(errs, err)
						}
						if id == g.ID {
							spent++
						}
					}(replicas[i%len(replicas)])
				}
				close(start)
				wg.Wait()
				if len(errs) > 0 {
					t.Fatalf("consumers failed: %v", errs)
				}
				if spent != uses {
					t.Fatalf("%d consumers spent a %d-use grant %d times", consumers, uses, spent)
				}
			}
		})
	}
}
