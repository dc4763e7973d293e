package gateway_test

// The JSON-RPC attacks of issue 21 as functions that run until ctx is done
// (each cleans up what it opened), and BenchmarkHostileJSONRPC: a
// well-behaved client's latency while each runs, against an idle run.
//
//	go test -run '^$' -bench BenchmarkHostileJSONRPC -benchtime 2000x ./host/gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bigBatch is a JSON-RPC batch of n tools/call requests of fx__sleep.
func bigBatch(n, ms int) string {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fx__sleep","arguments":{"ms":%d}}}`, i+1, ms)
	}
	b.WriteString("]")
	return b.String()
}

// attackBatchModern (item 4): 8,000 tools/call in one batch (≈800 KiB),
// posted again and again from 2 connections without an
// MCP-Protocol-Version header in a 2025-11-25 session: refused whole.
func attackBatchModern(ctx context.Context, tb testing.TB, base, token string) {
	batchFlood(ctx, tb, base, token, "2025-11-25", bigBatch(8000, 1000))
}

// attackBatchLegacy (item 4): batches of MaxBatch tools/call of fx__sleep
// (1 s) in a 2025-03-26 session, posted again and again from 2
// connections: max_concurrent of them run, the others are refused.
func attackBatchLegacy(ctx context.Context, tb testing.TB, base, token string) {
	batchFlood(ctx, tb, base, token, "2025-03-26", bigBatch(64, 1000))
}

// batchFlood posts batch again and again from 2 connections in a session
// that negotiated version, until ctx is done.
func batchFlood(ctx context.Context, tb testing.TB, base, token, version, batch string) {
	url := base + "/mcp"
	sid := openSession(tb, url, token, version)
	defer deleteSession(tb, url, token, sid)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for ctx.Err() == nil {
				attackPost(ctx, url, token, sid, batch)
			}
		})
	}
	wg.Wait()
}

// attackConcurrency (item 4): 256 tools/call of fx__sleep (200 ms) at
// once in one session, again and again: a wave starts when the previous
// one has been answered (the refused at once, the others after their
// sleep).
func attackConcurrency(ctx context.Context, tb testing.TB, base, token string) {
	url := base + "/mcp"
	sid := openSession(tb, url, token, "2025-11-25")
	defer deleteSession(tb, url, token, sid)
	for ctx.Err() == nil {
		var wg sync.WaitGroup
		for i := range 256 {
			wg.Go(func() {
				attackPost(ctx, url, token, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fx__sleep","arguments":{"ms":200}}}`, i), "Mcp-Protocol-Version", "2025-11-25")
			})
		}
		wg.Wait()
	}
}

// attackSessions (the session cap): initialize after initialize, never
// ending a session, from 4 connections.
func attackSessions(ctx context.Context, tb testing.TB, base, token string) {
	url := base + "/mcp"
	var mu sync.Mutex
	var opened []string
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, _, hdr := attackPost(ctx, url, token, "", initialize); hdr.Get("Mcp-Session-Id") != "" {
					mu.Lock()
					opened = append(opened, hdr.Get("Mcp-Session-Id"))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, sid := range opened {
		deleteSession(tb, url, token, sid)
	}
}

// attackIDs (item 6): requests whose ids the go-sdk would change (1.5,
// 1e308, 2^53+1, null...), from 4 connections.
func attackIDs(ctx context.Context, tb testing.TB, base, token string) {
	url := base + "/mcp"
	sid := openSession(tb, url, token, "2025-11-25")
	defer deleteSession(tb, url, token, sid)
	ids := []string{`1.5`, `1e308`, `9007199254740993`, `1180591620717411303424`, `null`, `-0`, `"\ud800"`}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for n := i; ctx.Err() == nil; n++ {
				attackPost(ctx, url, token, sid, `{"jsonrpc":"2.0","id":`+ids[n%len(ids)]+`,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"x"}}}`, "Mcp-Protocol-Version", "2025-11-25")
			}
		})
	}
	wg.Wait()
}

// deleteAttack (item 1) returns an attack that DELETEs the session victim
// returns, again and again, with its own token (another client's) and with
// a foreign Host header.
func deleteAttack(victim func() string, victimToken string) attack {
	return func(ctx context.Context, tb testing.TB, base, token string) {
		url := base + "/mcp"
		for n := 0; ctx.Err() == nil; n++ {
			if n%2 == 0 {
				deleteSession(tb, url, token, victim())
			} else {
				deleteSession(tb, url, victimToken, victim(), "Host", "evil.example:80")
			}
		}
	}
}

// BenchmarkHostileJSONRPC: alice, a well-behaved client, calls fx__echo
// through the gateway over HTTP while bob runs each attack (attack=none is
// the idle run); p50-µs and p99-µs are alice's latencies. Every call of
// alice's must succeed.
func BenchmarkHostileJSONRPC(b *testing.B) {
	f := startTB(b, testConfig)
	srv := httptest.NewServer(f.g.Handler())
	defer srv.Close()
	ctx := context.Background()
	hc := bearer{aliceToken, srv.Client().Transport}
	transport := &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: hc}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "alice"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	for _, c := range []struct {
		name string
		run  attack
	}{
		{"none", nil},
		{"batch-modern", attackBatchModern},
		{"batch-legacy", attackBatchLegacy},
		{"concurrency", attackConcurrency},
		{"sessions", attackSessions},
		{"ids", attackIDs},
		{"delete", deleteAttack(cs.ID, aliceToken)},
	} {
		b.Run("attack="+c.name, func(b *testing.B) {
			actx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				if c.run != nil {
					c.run(actx, b, srv.URL, bobToken)
				}
			}()
			defer func() { stop(); <-done }()
			if c.run != nil {
				time.Sleep(500 * time.Millisecond) // let the attack get going (a measurement, not a synchronisation)
			}
			benchCalls(b, cs, "fx__echo", map[string]any{"text": "hello"})
		})
	}
}
