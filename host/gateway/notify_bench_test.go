package gateway_test

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

	"github.com/toolhost/toolhost/internal/testutil"
)

// BenchmarkCallUnderSlowConsumer is a well-behaved client's tool call
// through toolhost serve (Streamable HTTP on loopback, to a go-sdk server
// over Streamable HTTP): on an idle gateway (load=idle); while the
// catalogue changes every 10ms, so that every session is sent
// notifications/tools/list_changed (load=churn: the baseline of the
// attack); and the same while clients that open their standalone SSE
// stream and never read it keep coming, a new one every 100ms, each on a
// connection with tiny socket buffers, until it is dropped (load=churn+unread).
// Reports the median and 99th-percentile call latency; issue 21 wants the
// p99 under attack within 2x of the run without it.
//
//	go test -run '^$' -bench CallUnderSlowConsumer -benchtime 2000x ./host/gateway/
func BenchmarkCallUnderSlowConsumer(b *testing.B) {
	up := mcp.NewServer(&mcp.Implementation{Name: "up"}, nil)
	noop := func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	}
	mcp.AddTool(up, &mcp.Tool{Name: "noop"}, noop)
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	b.Cleanup(upSrv.Close)
	f := startTB(b, "[servers.up]\nurl = \""+upSrv.URL+"\"\n")
	url := serveTiny(b, f)
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "good"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()

	// churn changes the catalogue every 10ms until stop is closed.
	churn := func(stop chan struct{}, wg *sync.WaitGroup) {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				mcp.AddTool(up, &mcp.Tool{Name: fmt.Sprintf("churn%d", i%50)}, noop)
				up.RemoveTools(fmt.Sprintf("churn%d", (i+25)%50))
			}
		}
	}
	// unread opens a non-reading client every 100ms until stop is closed.
	unread := func(stop chan struct{}, wg *sync.WaitGroup) {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			_, conn, err := openUnread(url)
			if err != nil {
				b.Error(err)
				return
			}
			defer conn.Close()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}

	b.Run("load=idle", func(b *testing.B) { benchCalls(b, cs, "up__noop", nil) })
	b.Run("load=churn", func(b *testing.B) {
		stop, wg := make(chan struct{}), &sync.WaitGroup{}
		wg.Add(1)
		go churn(stop, wg)
		benchCalls(b, cs, "up__noop", nil)
		close(stop)
		wg.Wait()
	})
	b.Run("load=churn+unread", func(b *testing.B) {
		stop, wg := make(chan struct{}), &sync.WaitGroup{}
		wg.Add(2)
		go churn(stop, wg)
		go unread(stop, wg)
		// Measure once the attack is on: a non-reading session was dropped.
		testutil.Eventually(b, waitTimeout, func() bool { return strings.Contains(scrape(f), "mcp_gateway_sessions_dropped_total") },
			"no session dropped")
		benchCalls(b, cs, "up__noop", nil)
		close(stop)
		wg.Wait()
		b.ReportMetric(dropped(f), "dropped-sessions")
	})
}

// dropped is f's count of sessions dropped so far.
func dropped(f *fixture) float64 {
	var n, total float64
	for _, line := range strings.Split(scrape(f), "\n") {
		if strings.HasPrefix(line, "mcp_gateway_sessions_dropped_total{") {
			if _, err := fmt.Sscanf(line[strings.LastIndexByte(line, ' ')+1:], "%g", &n); err == nil {
				total += n
			}
		}
	}
	return total
}

// scrape returns f's metrics in the Prometheus text format.
func scrape(f *fixture) string {
	rec := httptest.NewRecorder()
	f.m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}
