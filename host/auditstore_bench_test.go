package host

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host/store"
)

// BenchmarkCallToolStore measures what the audit trail in the store adds to
// a call: the same call through the host to a backend that answers in no
// time (fakeBackend, as BenchmarkHostOverhead), audited (a no-op
// Options.Audit hook, so the record, its canonical arguments and their
// HMAC are made either way), with the store off and on (a SQLite file,
// written by the writer goroutine). store=on minus store=off is the store
// write on the call's path: a correlation id and a queue send (the queue
// is sized to hold the whole run, so no call waits for room). rows/s is
// the writer's throughput over the run and the drain after it. Run the
// pair several times and compare medians:
//
//	go test -run XXX -bench BenchmarkCallToolStore -benchtime=20000x -count=6 ./host/
//
// (at most 65536 calls a run: the queue holds them all)
func BenchmarkCallToolStore(b *testing.B) {
	ctx := context.Background()
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}
	tool := &mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}
	args := map[string]any{"text": "hello"}
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "store=off", true: "store=on"}[on], func(b *testing.B) {
			opts := &Options{Audit: func(AuditRecord) {}, AuditKey: bytes.Repeat([]byte{1}, 32)}
			cfg := &config.Config{}
			if on {
				db, err := store.Open(ctx, "sqlite://"+filepath.Join(b.TempDir(), "toolhost.db"), store.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				opts.Store = db
				// Room for every record of the run: what is measured is
				// the call's path (the queue send), not the writer's
				// throughput, which is reported as rows/s below.
				cfg.Store.QueueSize = 1 << 16 // more than -benchtime=20000x calls
			}
			h, err := New(ctx, cfg, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			never := 0
			be := h.newBackend("t", KindStdio, "t__", 30*time.Second, config.Supervision{
				HealthCheck: config.HealthNone, HealthThreshold: 3, MaxRestarts: &never,
				CircuitBreaker: config.Circuit{Failures: 5, Cooldown: config.Duration(time.Minute), Successes: 3}})
			be.tr, be.state, be.tools, be.known = &fakeBackend{res: res}, StateReady, []*mcp.Tool{tool}, true
			be.maxOutput = DefaultMaxOutput
			h.add(be)
			if err := h.rebuild(true); err != nil {
				b.Fatal(err)
			}
			h.noValidate = true
			for b.Loop() {
				if res, err := h.CallTool(ctx, "t__echo", args); err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
			b.StopTimer()
			if on {
				// The writer's throughput: the time to drain the queue.
				start := time.Now()
				h.audit.store.close()
				st := h.StoreStatus()
				b.ReportMetric(float64(st.Dropped), "dropped")
				b.ReportMetric(float64(st.Written)/(b.Elapsed()+time.Since(start)).Seconds(), "rows/s")
			}
		})
	}
}

// BenchmarkAuditStorePut is the store's part of a call's path alone: the
// correlation id and the queue send of a record (auditor.write with and
// without the store; the hook does nothing, and a goroutine drains the
// queue in place of the writer, so no SQLite work shares the CPU).
func BenchmarkAuditStorePut(b *testing.B) {
	rec := AuditRecord{Time: time.Now(), Tool: "t__echo", Backend: "t", Decision: "allow", Outcome: OutcomeOK,
		ArgsHMAC: "d6107c8b52315a30928f37ec9d28c5fe80a9a2413425d3c100dc4784e21626df", Args: []byte(`{"text":"hello"}`)}
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "store=off", true: "store=on"}[on], func(b *testing.B) {
			a := &auditor{hook: func(AuditRecord) {}}
			if on {
				a.store = &auditStore{ch: make(chan AuditRecord, 4096), wait: time.Millisecond, stop: make(chan struct{}), logger: hclog.NewNullLogger()}
				done := make(chan struct{})
				go func() {
					defer close(done)
					for {
						select {
						case <-a.store.ch:
						case <-a.store.stop:
							return
						}
					}
				}()
				defer func() { close(a.store.stop); <-done }()
			}
			for b.Loop() {
				r := rec
				a.write(&r)
			}
		})
	}
}
