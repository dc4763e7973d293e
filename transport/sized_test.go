package transport_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
)

// rawResult is the JSON text of a text result that no encoder writes: with
// insignificant space and a member the go-sdk does not know, so that a size
// taken from a re-encoding cannot match it.
func rawResult(text string, pad int) string {
	return fmt.Sprintf(`{ "content" : [ {"type": "text", "text": %q} ],%s"x-note": %d }`, text, strings.Repeat(" ", pad), pad)
}

// sizedStdio connects to rawfixture, whose results are the bytes a call asks
// for, and returns it as a transport.SizedCaller.
func sizedStdio(t *testing.T, opts *transport.StdioOptions) (*transport.Stdio, transport.SizedCaller) {
	t.Helper()
	s := transport.NewStdio(transport.Command{Path: testutil.GoBinary(t, "./testdata/rawfixture")}, opts)
	if _, err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	var tr transport.Transport = s
	sc, ok := tr.(transport.SizedCaller)
	if !ok {
		t.Fatal("*transport.Stdio does not implement transport.SizedCaller")
	}
	return s, sc
}

// TestStdioCallToolSized: a stdio call's size is the length of the result's
// JSON text as the server wrote it (its response's "result" member), for
// many calls at once answered out of order, next to answers to IDs no
// request has, second answers to the same ID and lines that are not JSON;
// a response over MaxLineLength fails alone; a call that ended before its
// answer came leaves the next calls' sizes right and nothing behind.
func TestStdioCallToolSized(t *testing.T) {
	s, sc := sizedStdio(t, &transport.StdioOptions{MaxLineLength: 64 << 10})
	ctx := context.Background()

	const calls = 48
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			text := fmt.Sprintf("call %d %s", i, strings.Repeat("y", i*37))
			raw := rawResult(text, i%7)
			args := map[string]any{"result": raw, "delay_ms": (calls - i) % 8 * 5}
			switch i % 4 {
			case 1:
				args["stray"] = rawResult(strings.Repeat("s", 3000), 1)
			case 2:
				args["dup"] = rawResult("a second answer", 2)
			case 3:
				args["garbage"] = "not JSON-RPC"
			}
			res, size, err := sc.CallToolSized(ctx, &mcp.CallToolParams{Name: "raw", Arguments: args})
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != text {
				t.Errorf("call %d: result %.40q, want %.40q", i, got, text)
			}
			if size != len(raw) {
				enc, _ := json.Marshal(res)
				t.Errorf("call %d: size %d, want %d, the bytes the server sent (its encoding has %d)", i, size, len(raw), len(enc))
			}
		})
	}
	wg.Wait()

	// Over MaxLineLength: this call fails, the connection stays.
	over := rawResult(strings.Repeat("z", 70<<10), 0)
	if _, size, err := sc.CallToolSized(ctx, &mcp.CallToolParams{Name: "raw", Arguments: map[string]any{"result": over}}); !errors.Is(err, transport.ErrOutputTooLarge) || size != 0 {
		t.Errorf("a result over MaxLineLength: size %d, %v; want 0, ErrOutputTooLarge", size, err)
	}

	// A call whose deadline passes before its answer comes; the answer
	// arrives while the next call waits for its own.
	late := rawResult(strings.Repeat("l", 5000), 3)
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, size, err := sc.CallToolSized(tctx, &mcp.CallToolParams{Name: "raw", Arguments: map[string]any{"result": late, "delay_ms": 1000}})
	cancel()
	if !errors.Is(err, transport.ErrTimeout) || size != 0 {
		t.Errorf("a call past its deadline: size %d, %v; want 0, ErrTimeout", size, err)
	}
	next := rawResult("next", 4)
	if _, size, err := sc.CallToolSized(ctx, &mcp.CallToolParams{Name: "raw", Arguments: map[string]any{"result": next, "delay_ms": 1500}}); err != nil || size != len(next) {
		t.Errorf("the call after it: size %d, %v; want %d", size, err, len(next))
	}

	// CallTool on the same transport is unchanged.
	if res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "raw", Arguments: map[string]any{"result": rawResult("plain", 0)}}); err != nil || res.Content[0].(*mcp.TextContent).Text != "plain" {
		t.Errorf("CallTool: %v, %v", res, err)
	}
	if n := transport.PendingSizes(s); n != 0 {
		t.Errorf("%d calls still wait for a size after all returned", n)
	}
}

// TestStdioCallToolSizedTask: the size of a call of a tool that runs as a
// task is that of its final result (the answer to tasks/result), not of
// the CreateTaskResult that answered the tools/call.
func TestStdioCallToolSizedTask(t *testing.T) {
	s := transport.NewStdio(transport.Command{Path: testutil.GoBinary(t, "./testdata/taskfixture")}, nil)
	ctx := context.Background()
	if _, err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	var tr transport.Transport = s
	sc, ok := tr.(transport.SizedCaller)
	if !ok {
		t.Fatal("*transport.Stdio does not implement transport.SizedCaller")
	}
	res, size, err := sc.CallToolSized(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"polls": 1, "poll": 1}})
	if err != nil {
		t.Fatal(err)
	}
	// What taskfixture writes for tasks/result (encoding/json of a map).
	want, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": "slow done after 1 polls"}}, "isError": false})
	if got := res.Content[0].(*mcp.TextContent).Text; got != "slow done after 1 polls" || size != len(want) {
		t.Errorf("task call: %q of size %d, want %q of size %d", got, size, "slow done after 1 polls", len(want))
	}
}

// BenchmarkStdioResultSize measures what learning a stdio result's size
// costs per call: via=encode is CallTool followed by encoding the result
// with encoding/json (what the host did before *Stdio was a SizedCaller),
// via=sized is CallToolSized; for the fixture's echo (a result of a few
// dozen bytes) and big (1 MiB).
func BenchmarkStdioResultSize(b *testing.B) {
	ctx := context.Background()
	s := transport.NewStdio(transport.Command{Path: testutil.Fixture(b), InheritEnv: config.DefaultInheritEnv}, &transport.StdioOptions{MaxLineLength: 4 << 20})
	if _, err := s.Connect(ctx); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		name string
		p    *mcp.CallToolParams
	}{
		{"echo", &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}},
		{"big=1MiB", &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"bytes": 1 << 20}}},
	} {
		b.Run("result="+c.name+"/via=encode", func(b *testing.B) {
			for b.Loop() {
				res, err := s.CallTool(ctx, c.p)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(res); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("result="+c.name+"/via=sized", func(b *testing.B) {
			for b.Loop() {
				if _, size, err := s.CallToolSized(ctx, c.p); err != nil || size == 0 {
					b.Fatal(size, err)
				}
			}
		})
	}
}
