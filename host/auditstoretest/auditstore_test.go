// Package auditstoretest tests the host's audit trail in the store
// (host/auditstore.go) on SQLite and PostgreSQL. It is a package of its own
// so that the PostgreSQL server of its test binary is not a child process
// of host's tests, which check that none is left after Close.
package auditstoretest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/store"
	"github.com/toolhost/toolhost/internal/pgtest"
	"github.com/toolhost/toolhost/internal/testutil"
)

func TestMain(m *testing.M) {
	code := testutil.Main(m)
	pgtest.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// storeEngines are the stores the audit writer is tested on: a SQLite file
// and a database on the test binary's PostgreSQL.
var storeEngines = []struct {
	name string
	url  func(t *testing.T) string
}{
	{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "toolhost.db") }},
	{"postgres", func(t *testing.T) string { return pgtest.URL(t) }},
}

// storeHost starts a Host on the fixture server (backend "fx") whose audit
// records go to db, and to the records it returns.
func storeHost(t *testing.T, db *store.DB, st config.Store, logs *testutil.Buffer) (*host.Host, func() []host.AuditRecord) {
	t.Helper()
	cfg := &config.Config{Servers: map[string]*config.Server{
		"fx": {Name: "fx", Command: testutil.Fixture(t), InheritEnv: config.DefaultInheritEnv},
	}, Store: st}
	var mu sync.Mutex
	var recs []host.AuditRecord
	var out = hclog.DefaultOutput
	if logs != nil {
		out = logs
	}
	h, err := host.New(context.Background(), cfg, &host.Options{
		Store:    db,
		AuditKey: bytes.Repeat([]byte{7}, 32),
		Logger:   hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Warn}),
		Audit:    func(r host.AuditRecord) { mu.Lock(); recs = append(recs, r); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, func() []host.AuditRecord {
		mu.Lock()
		defer mu.Unlock()
		return append([]host.AuditRecord(nil), recs...)
	}
}

func openStore(t *testing.T, url string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// allRows pages through every audit row of db.
func allRows(t *testing.T, db *store.DB, f store.AuditFilter) []store.AuditRow {
	t.Helper()
	var out []store.AuditRow
	for {
		f.Limit = store.MaxAuditLimit
		rows, next, err := db.QueryAudit(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rows...)
		if next == "" {
			return out
		}
		f.Cursor = next
	}
}

// TestAuditStoreEveryCall: 1000 calls (from 8 goroutines, a tenth of them
// denied or unknown, some with hostile names) give 1000 rows, each with
// the correlation id, outcome and record the hook saw, once Close has
// flushed the queue; a correlation id given with WithCorrelationID is
// kept.
func TestAuditStoreEveryCall(t *testing.T) {
	for _, e := range storeEngines {
		t.Run(e.name, func(t *testing.T) {
			db := openStore(t, e.url(t))
			h, records := storeHost(t, db, config.Store{}, nil)
			ctx := host.WithClient(context.Background(), "'; DROP TABLE audit; --")
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := g; i < 1000; i += 8 {
						tool, cctx := "fx__echo", ctx
						switch {
						case i%10 == 0:
							tool = "'; DROP TABLE audit; --"
						case i == 999:
							cctx = host.WithCorrelationID(ctx, "given-by-the-caller")
						}
						h.CallTool(cctx, tool, map[string]any{"text": fmt.Sprint(i), "api_token": "s3cret"})
					}
				}()
			}
			wg.Wait()
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			recs := records()
			rows := allRows(t, db, store.AuditFilter{})
			if len(recs) != 1000 || len(rows) != 1000 {
				t.Fatalf("%d records, %d rows; want 1000 of each", len(recs), len(rows))
			}
			byID := map[string]store.AuditRow{}
			for _, r := range rows {
				byID[r.CorrelationID] = r
			}
			for _, rec := range recs {
				r, ok := byID[rec.CorrelationID]
				if !ok || len(rec.CorrelationID) != 32 && rec.CorrelationID != "given-by-the-caller" {
					t.Fatalf("record %+v: no row with its correlation id", rec)
				}
				if r.Tool != rec.Tool || r.Outcome != rec.Outcome || r.Client != rec.Client || r.ArgsHMAC != rec.ArgsHMAC ||
					r.Attempts != rec.Retries+1 || !r.Time.Equal(rec.Time.Truncate(time.Microsecond)) {
					t.Fatalf("row %+v for record %+v", r, rec)
				}
				var back host.AuditRecord
				if err := json.Unmarshal(r.Record, &back); err != nil || back.CorrelationID != rec.CorrelationID || string(back.Args) != string(rec.Args) {
					t.Fatalf("row's record %s (%v) for %+v", r.Record, err, rec)
				}
				if strings.Contains(string(r.Record), "s3cret") {
					t.Fatalf("a secret argument in the store: %s", r.Record)
				}
			}
			if _, ok := byID["given-by-the-caller"]; !ok {
				t.Fatal("WithCorrelationID's id not kept")
			}
			if n := len(allRows(t, db, store.AuditFilter{Outcome: host.OutcomeUnknownTool, Tool: "'; DROP*"})); n != 100 {
				t.Fatalf("%d unknown-tool rows, want 100", n)
			}
			st := h.StoreStatus()
			if !st.Audit || st.Written != 1000 || st.Dropped != 0 || st.Queued != 0 || st.Engine != e.name || st.Mode != "persistent" {
				t.Fatalf("status %+v", st)
			}
		})
	}
}

// TestAuditStoreLostAndBack: the audit table goes away under a running
// host (renamed by another connection, as a failed disk or a dropped
// PostgreSQL would make writes fail); calls go on, none slower than the
// bound allows, the small queue fills and records are dropped, counted,
// reported and logged; when the table is back, writing resumes and every
// record is either a row or counted as dropped.
func TestAuditStoreLostAndBack(t *testing.T) {
	for _, e := range storeEngines {
		t.Run(e.name, func(t *testing.T) {
			url := e.url(t)
			db := openStore(t, url)
			other := openStore(t, url) // the saboteur's connection
			var logs testutil.Buffer
			h, records := storeHost(t, db, config.Store{QueueSize: 8, QueueWait: config.Duration(time.Millisecond)}, &logs)
			ctx := context.Background()
			call := func(n int) {
				for i := range n {
					start := time.Now()
					if _, err := h.CallTool(ctx, "fx__echo", map[string]any{"text": fmt.Sprint(i)}); err != nil {
						t.Fatal(err)
					}
					// Generous: a call of the fixture takes well under a
					// millisecond; a blocked writer would hold it forever.
					if d := time.Since(start); d > 5*time.Second {
						t.Fatalf("a call took %v while the store failed", d)
					}
				}
			}
			call(20)
			testutil.Eventually(t, 10*time.Second, func() bool { return h.StoreStatus().Written == 20 }, "20 rows written")
			if _, err := other.SQL().Exec("ALTER TABLE audit RENAME TO audit_away"); err != nil {
				t.Fatal(err)
			}
			call(300)
			testutil.Eventually(t, 10*time.Second, func() bool {
				st := h.StoreStatus()
				return st.Dropped > 0 && st.LastError != ""
			}, "drops and the error reported")
			testutil.Eventually(t, 10*time.Second, func() bool {
				return strings.Contains(logs.String(), "audit records dropped") && strings.Contains(logs.String(), "audit store write failed")
			}, "drops and failures logged")
			if _, err := other.SQL().Exec("ALTER TABLE audit_away RENAME TO audit"); err != nil {
				t.Fatal(err)
			}
			call(30)
			testutil.Eventually(t, 20*time.Second, func() bool {
				st := h.StoreStatus()
				return st.Queued == 0 && st.LastError == "" && st.Written+st.Dropped == 350
			}, "writing resumed")
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			st := h.StoreStatus()
			rows := allRows(t, other, store.AuditFilter{})
			if len(records()) != 350 || int64(len(rows)) != st.Written || st.Written+st.Dropped != 350 {
				t.Fatalf("350 records: %d rows, status %+v", len(rows), st)
			}
			t.Logf("status after the outage: %+v", st)
		})
	}
}

// TestAuditStoreRetention: the sweep at start deletes the rows older than
// [store] audit_retention and keeps the rest; "0s" keeps everything.
func TestAuditStoreRetention(t *testing.T) {
	for _, e := range storeEngines {
		t.Run(e.name, func(t *testing.T) {
			url := e.url(t)
			db := openStore(t, url)
			now := time.Now()
			var rows []store.AuditRow
			for i, age := range []time.Duration{time.Hour, 47 * time.Hour, 49 * time.Hour, 400 * 24 * time.Hour} {
				rows = append(rows, store.AuditRow{Time: now.Add(-age), CorrelationID: fmt.Sprint(i), Record: []byte("{}")})
			}
			if err := db.InsertAudit(context.Background(), rows); err != nil {
				t.Fatal(err)
			}
			keep := config.Duration(0)
			h, _ := storeHost(t, db, config.Store{AuditRetention: &keep}, nil)
			h.Close()
			if n := len(allRows(t, db, store.AuditFilter{})); n != 4 {
				t.Fatalf("retention 0s: %d rows left, want 4", n)
			}
			ret := config.Duration(48 * time.Hour)
			h, _ = storeHost(t, db, config.Store{AuditRetention: &ret}, nil)
			testutil.Eventually(t, 10*time.Second, func() bool { return h.StoreStatus().Swept == 2 }, "the sweep at start")
			h.Close()
			left := allRows(t, db, store.AuditFilter{})
			if len(left) != 2 || left[0].CorrelationID != "0" || left[1].CorrelationID != "1" {
				t.Fatalf("after the sweep: %+v", left)
			}
		})
	}
}
