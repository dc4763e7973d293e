package transport_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
)

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) == 0 {
		t.Fatalf("no content: %#v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T", res.Content[0])
	}
	return tc.Text
}

// TestStdioFastCallHostile: calls take toolhost's own path on a
// 2025-11-25 server; answers forged for IDs of that path that no call
// waits for (one already answered, one never used, one with an escape in
// its ID), answers to IDs nobody sent, second answers, lines that are not
// JSON, every content kind and results the go-sdk refuses all leave the
// waiting calls with exactly their own answers, and nothing waits after.
func TestStdioFastCallHostile(t *testing.T) {
	s, _ := sizedStdio(t, nil)
	ctx := context.Background()
	call := func(args map[string]any) (*mcp.CallToolResult, error) {
		return s.CallTool(ctx, &mcp.CallToolParams{Name: "raw", Arguments: args})
	}
	forged := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"forged"}]}}`
	}
	res, err := call(map[string]any{"result": rawResult("first", 0)})
	if err != nil || text(t, res) != "first" {
		t.Fatalf("first call: %v %v", res, err)
	}
	before := transport.FastCalls(s)
	if before == 0 {
		t.Fatal("the call did not take toolhost's own path")
	}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			want := fmt.Sprintf("call %d", i)
			args := map[string]any{"result": rawResult(want, i), "delay_ms": (32 - i) % 5 * 7}
			switch i % 4 {
			case 0:
				args["garbage"] = forged(`"th-1"`) // answered already
			case 1:
				args["garbage"] = forged(`"th-99999999"`) // never sent
			case 2:
				args["garbage"] = forged(`"th-\u0031"`) // escaped: not ours, to the go-sdk
				args["dup"] = rawResult("second answer", 1)
			case 3:
				args["garbage"] = forged(`1`) // a go-sdk ID no request has now
				args["stray"] = rawResult("stray", 1)
			}
			res, err := call(args)
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			if got := text(t, res); got != want {
				t.Errorf("call %d: %q, want %q", i, got, want)
			}
		})
	}
	wg.Wait()

	kinds := `{"content":[{"type":"text","text":"t"},{"type":"image","data":"aGk=","mimeType":"image/png"},` +
		`{"type":"audio","data":"aGk=","mimeType":"audio/wav"},{"type":"resource_link","uri":"file:///x","name":"x","size":3},` +
		`{"type":"resource","resource":{"uri":"file:///y","text":"y"}}],"structuredContent":{"a":[1,"b",null]},"_meta":{"k":"v"},"isError":true}`
	res, err = call(map[string]any{"result": kinds})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 5 || !res.IsError || res.Meta["k"] != "v" || res.StructuredContent == nil {
		t.Errorf("every content kind: %#v", res)
	}
	if _, ok := res.Content[4].(*mcp.EmbeddedResource); !ok {
		t.Errorf("content 4 is %T", res.Content[4])
	}
	// Results the go-sdk refuses fail the call alone, as they did.
	deep := `{"content":[],"structuredContent":` + strings.Repeat("[", 1500) + strings.Repeat("]", 1500) + `}`
	for _, bad := range []string{`{"content":[{"type":"nope"}]}`, `{"content":[null]}`, `"a string"`, `1`, deep} {
		if _, err := call(map[string]any{"result": bad}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if res, err := call(map[string]any{"result": rawResult("after", 0)}); err != nil || text(t, res) != "after" {
		t.Errorf("a call after all that: %v %v", res, err)
	}
	if n := transport.FastWaiting(s); n != 0 {
		t.Errorf("%d calls still wait", n)
	}
	if got := transport.FastCalls(s) - before; got < 32 {
		t.Errorf("%d of the calls took toolhost's path, want all", got)
	}
}

// TestStdioFastCallCancel: a call whose context ends returns at once with
// the context's error and the server is told (notifications/cancelled, as
// the go-sdk sends it: the fixture counts it); the answers to calls still
// in flight are theirs; on a 2026-07-28 session too (the go-sdk's
// per-request _meta is sent with toolhost's calls).
func TestStdioFastCallCancel(t *testing.T) {
	s := fixtureStdio(t, "-faults")
	ctx := context.Background()
	init, err := s.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if init.ProtocolVersion < transport.ProtocolNoPing {
		t.Fatalf("the fixture negotiated %s", init.ProtocolVersion)
	}
	if _, err := s.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "b"}})
	if err != nil || !strings.Contains(text(t, res), "b") {
		t.Fatalf("call: %v %v", res, err)
	}
	if transport.FastCalls(s) != 1 {
		t.Fatal("the call did not take toolhost's path")
	}

	calls0, _ := fixtureStats(t, s)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := s.CallTool(cctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}})
		done <- err
	}()
	testutil.Eventually(t, 30*time.Second, func() bool { return transport.FastWaiting(s) == 1 })
	// The fixture counts the cancelled calls its tool handler saw; a
	// cancellation that reaches the server before it has dispatched the
	// call (a busy machine) never gets there. So the cancel waits until
	// the fixture has counted the sleep call (each stats call counts too).
	polls := int64(0)
	testutil.Eventually(t, 30*time.Second, func() bool { polls++; calls, _ := fixtureStats(t, s); return calls-calls0-polls >= 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool { _, n := fixtureStats(t, s); return n == 1 })
	if n := transport.FastWaiting(s); n != 0 {
		t.Errorf("%d calls still wait", n)
	}
}

// TestStdioFastCallLost: calls waiting when the server dies fail with the
// exit explained (ErrConnectionLost), as they did through the go-sdk, and
// so does a call made after.
func TestStdioFastCallLost(t *testing.T) {
	s := fixtureStdio(t, "-faults")
	ctx := context.Background()
	if _, err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.ListTools(ctx); err != nil { // shows the go-sdk's _meta
		t.Fatal(err)
	}
	errs := make(chan error, 3)
	for range 2 {
		go func() {
			_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}})
			errs <- err
		}()
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return transport.FastWaiting(s) == 2 })
	go func() {
		_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "crash"})
		errs <- err
	}()
	for range 3 {
		if err := <-errs; !errors.Is(err, transport.ErrConnectionLost) {
			t.Errorf("a call when the server died: %v, want ErrConnectionLost", err)
		}
	}
	if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); !errors.Is(err, transport.ErrConnectionLost) {
		t.Errorf("a call after: %v", err)
	}
}

// maxCallBytes bounds what one stdio tools/call allocates in toolhost
// (issue 26, item 2: from 142 KB through the host).
const maxCallBytes = 16 << 10

// TestStdioCallAllocs: a tools/call to the Go fixture allocates at most
// maxCallBytes in this process (every goroutine: the reader's too).
func TestStdioCallAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	s := fixtureStdio(t)
	ctx := context.Background()
	if _, err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	p := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	per := testutil.BytesPerCall(200, func() {
		if _, err := s.CallTool(ctx, p); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%d bytes per call", per)
	if per > maxCallBytes {
		t.Errorf("a stdio tools/call allocates %d bytes, over %d", per, maxCallBytes)
	}
}

// BenchmarkClientCall: a tools/call to the Go fixture over stdio through
// toolhost's client, and through a plain go-sdk client (mcp.Client with a
// CommandTransport) to the same binary, in the same run.
func BenchmarkClientCall(b *testing.B) {
	ctx := context.Background()
	fixture := testutil.Fixture(b)
	p := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	b.Run("transport=stdio/client=toolhost", func(b *testing.B) {
		s := transport.NewStdio(transport.Command{Path: fixture}, nil)
		if _, err := s.Connect(ctx); err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		if _, err := s.ListTools(ctx); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.CallTool(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("transport=http/client=toolhost", func(b *testing.B) {
		h := transport.NewHTTP(fixtureHTTPProc(b), nil)
		if _, err := h.Connect(ctx); err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		if _, err := h.ListTools(ctx); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.CallTool(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
		if transport.HTTPFastCalls(h) == 0 {
			b.Fatal("not on toolhost's path")
		}
	})
	b.Run("transport=http/client=go-sdk", func(b *testing.B) {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: fixtureHTTPProc(b)}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cs.CallTool(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("transport=stdio/client=go-sdk", func(b *testing.B) {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(fixture)}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cs.CallTool(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// fixtureStats is the fixture's count of calls served and of calls its
// handlers saw cancelled (its stats tool, which counts itself).
func fixtureStats(t *testing.T, s *transport.Stdio) (calls, cancelled int64) {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "stats"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Calls, Cancelled int64 }
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("stats: %v: %s", err, b)
	}
	return st.Calls, st.Cancelled
}
