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
)

// BenchmarkCallUnderSlowConsumer is a well-behaved client's tool call
// through toolhost serve (Streamable HTTP on loopback, to a go-sdk server
// over Streamable HTTP) while the gateway is idle (attack=none) and while
// clients that open their standalone SSE stream and never read it keep
// coming (a new one every 100ms, each on a connection with tiny socket
// buffers) and the catalogue changes every 2ms, so that every one of
// them is sent notifications/tools/list_changed until it is dropped
// (attack=unread). Reports the median and 99th-percentile call latency;
// issue 21 wants the p99 under attack within 2x the idle one.
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

	b.Run("attack=none", func(b *testing.B) { benchCalls(b, cs, "up__noop", nil) })
	b.Run("attack=unread", func(b *testing.B) {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { // the catalogue changes
			defer wg.Done()
			tick := time.NewTicker(2 * time.Millisecond)
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
		}()
		go func() { // non-reading clients keep coming
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
		}()
		// Measure once the attack is on: a non-reading session was dropped.
		for !strings.Contains(scrape(f), "mcp_gateway_sessions_dropped_total") {
			time.Sleep(10 * time.Millisecond)
		}
		benchCalls(b, cs, "up__noop", nil)
		close(stop)
		wg.Wait()
	})
}

// scrape returns f's metrics in the Prometheus text format.
func scrape(f *fixture) string {
	rec := httptest.NewRecorder()
	f.m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}
