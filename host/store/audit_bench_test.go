package store

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkInsertAudit writes batches of 50 audit rows (what the host's
// writer collects in 50 ms at a thousand calls a second) into a SQLite
// file, as a serve's default store does; ns/op is per row. id=time is
// InsertAudit's own id (TimeID), id=random a random one (NewID, as before).
//
//	go test -run '^$' -bench InsertAudit -benchmem -benchtime 20000x -count 4 ./host/store/
func BenchmarkInsertAudit(b *testing.B) {
	for _, ids := range []string{"random", "time"} {
		b.Run("id="+ids, func(b *testing.B) { benchInsertAudit(b, ids == "random") })
	}
}

func benchInsertAudit(b *testing.B, randomIDs bool) {
	ctx := context.Background()
	db, err := Open(ctx, "sqlite://"+filepath.Join(b.TempDir(), "t.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rec := []byte(`{"time":"2026-11-27T11:45:39.67489458Z","profile":"review","tool":"fs__read_file","backend":"fs","decision":"allow","outcome":"ok","latency_ms":1.2}`)
	const batch = 50
	rows := make([]AuditRow, batch)
	b.ResetTimer()
	n := 0
	for b.Loop() {
		i := n % batch
		rows[i] = AuditRow{Time: time.Now(), CorrelationID: NewID(), Client: "c" + strconv.Itoa(n%4), Profile: "review", Op: "tools/call",
			Backend: "fx", Tool: "fx__echo", Decision: "allow", Outcome: "ok", LatencyMS: 1.2, ArgsHMAC: "d6107c8b52315a30928f37ec9d28c5fe", Record: rec}
		if randomIDs {
			rows[i].ID = NewID()
		}
		n++
		if i == batch-1 {
			if err := db.InsertAudit(ctx, rows); err != nil {
				b.Fatal(err)
			}
		}
	}
}
