package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/transport"
)

type relayAnswer struct {
	Result json.RawMessage `json:"result"`
	Code   string          `json:"code"`
	Msg    string          `json:"message"`
}

func relay(t *testing.T, ctx context.Context, p *Plugin, steps string) []relayAnswer {
	t.Helper()
	res, err := p.CallTool(ctx, &mcp.CallToolParams{Name: "relay", Arguments: json.RawMessage(`{"steps":` + steps + `}`)})
	if err != nil {
		t.Fatalf("relay: %v", err)
	}
	if res.IsError {
		t.Fatalf("relay: error result %s", resultText(res))
	}
	var out []relayAnswer
	if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil {
		t.Fatalf("relay output %q: %v", resultText(res), err)
	}
	return out
}

func codes(as []relayAnswer) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.Code
		if s[i] == "" {
			s[i] = "ok"
		}
	}
	return strings.Join(s, ",")
}

type testKey struct{}

// TestHostToolsNotGranted: a plugin without PluginOptions.Tools gets the
// distinct not_granted answer (not a trap), for calls and searches.
func TestHostToolsNotGranted(t *testing.T) {
	e := newTestEngine(t)
	p := connect(t, e, "hosttools", Manifest{Timeout: 5 * time.Minute}, nil)
	got := relay(t, context.Background(), p, `[{"name":"x__y"},{"query":"q"}]`)
	if codes(got) != "not_granted,not_granted" || !strings.Contains(got[0].Msg, "may not call the host's tools") {
		t.Fatalf("answers %+v", got)
	}
}

// TestHostTools: a granted plugin's inner calls reach HostTools.Call with
// the caller's context (its values and the plugin call's deadline), and
// every bound is its own answer code; the counters are per plugin call.
func TestHostTools(t *testing.T) {
	e := newTestEngine(t)
	var sawDeadline, sawValue atomic.Bool
	ht := &HostTools{
		Call: func(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
			_, ok := ctx.Deadline()
			sawDeadline.Store(ok)
			sawValue.Store(ctx.Value(testKey{}) == "outer")
			switch name {
			case "fx__echo":
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(args)}}}, nil
			case "fx__big":
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("b", 600)}}}, nil
			case "fx__denied":
				return nil, errors.New(`tool "fx__denied" is not allowed by the policy`)
			}
			return nil, fmt.Errorf("unknown tool %q", name)
		},
		MaxCalls:       4,
		MaxResultBytes: 1000,
		MaxArgBytes:    200,
	}
	p := connect(t, e, "hosttools", Manifest{Timeout: 5 * time.Minute}, &PluginOptions{Tools: ht})
	ctx := context.WithValue(context.Background(), testKey{}, "outer")

	got := relay(t, ctx, p, `[{"name":"fx__echo","args":{"a":1}},{"name":"fx__denied"},{"query":"echo"}]`)
	if codes(got) != "ok,failed,no_search" {
		t.Fatalf("answers %+v", got)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(got[0].Result, &res); err != nil || resultText(&res) != `{"a":1}` {
		t.Fatalf("result %s: %v", got[0].Result, err)
	}
	if !strings.Contains(got[1].Msg, "not allowed by the policy") {
		t.Errorf("failed message %q", got[1].Msg)
	}
	if !sawDeadline.Load() || !sawValue.Load() {
		t.Errorf("inner call context: deadline %v, caller's value %v", sawDeadline.Load(), sawValue.Load())
	}

	// max_calls: 4 per plugin call, then each request is refused.
	if got := relay(t, ctx, p, `[{"name":"fx__echo","times":6}]`); codes(got) != "ok,ok,ok,ok,max_calls,max_calls" {
		t.Fatalf("max_calls: %s", codes(got))
	} else if !strings.Contains(got[4].Msg, "over max_calls (4 per run)") {
		t.Errorf("max_calls message %q", got[4].Msg)
	}
	// max_args: a request over 200 bytes is refused before it is read.
	if got := relay(t, ctx, p, `[{"name":"fx__echo","pad":100},{"name":"fx__echo","pad":300}]`); codes(got) != "ok,max_args" {
		t.Fatalf("max_args: %s %+v", codes(got), got)
	}
	// max_result: 1000 bytes of results per plugin call; once over, every
	// later result is refused too.
	if got := relay(t, ctx, p, `[{"name":"fx__big"},{"name":"fx__big"},{"name":"fx__echo"}]`); codes(got) != "ok,max_result,max_result" {
		t.Fatalf("max_result: %s", codes(got))
	}
	// The counters start again at every plugin call.
	if got := relay(t, ctx, p, `[{"name":"fx__big"}]`); codes(got) != "ok" {
		t.Fatalf("next call: %s", codes(got))
	}

	ht.Search = func(_ context.Context, q string, limit int) ([]*mcp.Tool, error) {
		return []*mcp.Tool{{Name: "fx__" + q}}, nil
	}
	if got := relay(t, ctx, p, `[{"query":"echo"}]`); codes(got) != "ok" || !strings.Contains(string(got[0].Result), `"fx__echo"`) {
		t.Fatalf("search: %+v", got)
	}
}

// TestHostToolsDeadline: an inner call that outlasts the plugin call's
// deadline sees its context done (the outer deadline covers it), and the
// plugin call fails with ErrTimeout; the pool stays usable.
func TestHostToolsDeadline(t *testing.T) {
	e := newTestEngine(t)
	innerDone := make(chan error, 1)
	innerStarted := make(chan struct{}, 1)
	ht := &HostTools{Call: func(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
		if name == "fx__block" {
			innerStarted <- struct{}{}
			<-ctx.Done()
			innerDone <- ctx.Err()
			return nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}}
	p := connect(t, e, "hosttools", Manifest{Timeout: 5 * time.Minute}, &PluginOptions{Tools: ht})
	relay(t, context.Background(), p, `[{"name":"fx__echo"}]`) // warm: the first call may wait for a cold compile

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := p.CallTool(ctx, &mcp.CallToolParams{Name: "relay", Arguments: json.RawMessage(`{"steps":[{"name":"fx__block"}]}`)})
	if !errors.Is(err, transport.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	// The host function returns before the plugin call does: an inner
	// call that started has ended by now.
	select {
	case <-innerStarted:
		if ierr := <-innerDone; !errors.Is(ierr, context.DeadlineExceeded) {
			t.Errorf("inner ctx err = %v", ierr)
		}
	default:
		t.Log("the deadline passed before the inner call started (a busy machine)")
	}
	// Cancellation by the caller, once the inner call runs, reaches it.
	cctx, ccancel := context.WithCancel(context.Background())
	defer ccancel()
	callDone := make(chan struct{})
	go func() {
		select {
		case <-innerStarted:
			ccancel()
		case <-callDone:
		}
	}()
	_, err = p.CallTool(cctx, &mcp.CallToolParams{Name: "relay", Arguments: json.RawMessage(`{"steps":[{"name":"fx__block"}]}`)})
	close(callDone)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err = %v, want context.Canceled", err)
	}
	if ierr := <-innerDone; !errors.Is(ierr, context.Canceled) {
		t.Fatalf("cancelled: inner ctx err = %v", ierr)
	}
	if got := relay(t, context.Background(), p, `[{"name":"fx__echo"}]`); codes(got) != "ok" {
		t.Fatalf("after: %s", codes(got))
	}
}
