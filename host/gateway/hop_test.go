package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/gateway"
)

// hopConfig is the asking fixture (unpinned, with configured roots) and the
// plain one (fx, for its sleep and stats).
func hopConfig(t *testing.T) string {
	return unpinned + "roots = [" + strconv.Quote("file:///configured/root") + "]\n" +
		testConfig[strings.Index(testConfig, "[servers.fx]"):strings.Index(testConfig, "[policy]")]
}

// TestMultiRoundInline: a 2026-07-28 client that declared none of
// elicitation, sampling and roots has its calls run inline (no goroutine
// of their own, mrtr.go), over the go-sdk's serving and the stdio fast
// path alike; an upstream server that asks such a client for elicitation
// or sampling anyway gets ErrNoClient (the call's result says the client
// did not declare it), one that asks for roots gets the configured roots,
// and a cancelled inline call cancels its upstream call. A client that
// declared a capability still has its call on a goroutine of its own, and
// its input round works.
func TestMultiRoundInline(t *testing.T) {
	f := start(t, hopConfig(t))
	for _, via := range []string{"mem", "pipe"} {
		t.Run("via="+via, func(t *testing.T) {
			connect := memSession
			if via == "pipe" {
				connect = pipeSession
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			bare := mcp.NewClient(&mcp.Implementation{Name: "t"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
			cs := connect(t, f, bare, nil)
			if v := cs.InitializeResult().ProtocolVersion; v < "2026-07-28" {
				t.Fatalf("the client negotiated %s; the test needs 2026-07-28 or later", v)
			}
			detached := gateway.MultiRoundDetached()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "inline"}})
			if err != nil || res.IsError || text(res) != "inline" {
				t.Fatalf("echo: %v %+v", err, res)
			}
			for _, tc := range []struct {
				tool string
				args map[string]any
				want string
			}{
				{"ask__elicit", map[string]any{}, "did not declare the elicitation capability"},
				{"ask__sample", map[string]any{"prompt": "hi"}, "did not declare the sampling capability"},
			} {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
				if err != nil {
					t.Fatalf("%s: %v", tc.tool, err)
				}
				if res.NeedsInput() || !res.IsError || !strings.Contains(text(res), tc.want) {
					t.Errorf("%s from a client that declared nothing: %q (isError %v, input requests %d), want an error naming %q",
						tc.tool, text(res), res.IsError, len(res.InputRequests), tc.want)
				}
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask__roots", Arguments: map[string]any{}})
			if err != nil || res.IsError || res.NeedsInput() || text(res) != "file:///configured/root" {
				t.Errorf("roots of a client that declared nothing: %v %q (isError %v), want the configured root", err, text(res), res != nil && res.IsError)
			}

			// Cancelled mid-call: the upstream call is cancelled too.
			calls0, cancelled0 := stats(t, f.h)
			cctx, ccancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "fx__sleep", Arguments: map[string]any{"ms": 600000}})
				errc <- err
			}()
			polls := int64(0)
			eventually(t, "the sleep call to reach the fixture", func() bool {
				polls++
				n, _ := stats(t, f.h)
				return n-calls0-polls >= 1
			})
			ccancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("a cancelled inline call: %v, want context.Canceled", err)
			}
			eventually(t, "the fixture to see the call cancelled", func() bool { _, n := stats(t, f.h); return n > cancelled0 })
			if n := gateway.MultiRoundDetached() - detached; n != 0 {
				t.Errorf("%d calls of a client that declared nothing ran on a goroutine of their own, want 0", n)
			}

			// A client that declared elicitation: its own goroutine, and
			// its input round.
			asking := mcp.NewClient(&mcp.Implementation{Name: "t"}, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{},
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
			})
			cs2 := connect(t, f, asking, nil)
			detached = gateway.MultiRoundDetached()
			res, err = cs2.CallTool(ctx, &mcp.CallToolParams{Name: "ask__elicit", Arguments: map[string]any{}})
			if err != nil || res.IsError || text(res) != `action=accept content={"name":"Ada"}` {
				t.Errorf("elicitation of a client that declared it: %v %+v", err, res)
			}
			if n := gateway.MultiRoundDetached() - detached; n != 1 {
				t.Errorf("%d calls of a client that declared elicitation ran on a goroutine of their own, want 1", n)
			}
		})
	}
}

// TestFastStdioInlineBurst: fast calls run on the goroutine that read them,
// which hands the reading on (fast.go readFrom): lines that arrive in one
// write, already buffered when a call takes its reader's goroutine (a
// call that blocks, 40 calls, a ping, the cancellation of the blocked
// call), are all read and answered, each response with its own id and
// text, and the cancelled call ends.
func TestFastStdioInlineBurst(t *testing.T) {
	f := start(t, testConfig)
	c := startRawStdio(t, f)
	c.send(legacyInit)
	c.until(`"init"`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	before := gateway.FastServed()
	var burst strings.Builder
	burst.WriteString(callLine(`"blocked"`, `{"name":"fx__sleep","arguments":{"ms":600000}}`) + "\n")
	for i := range 40 {
		burst.WriteString(callLine(strconv.Itoa(i), `{"name":"fx__echo","arguments":{"text":"t`+strconv.Itoa(i)+`"}}`) + "\n")
	}
	burst.WriteString(`{"jsonrpc":"2.0","id":"ping","method":"ping"}` + "\n")
	burst.WriteString(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"blocked"}}`)
	if !c.send(burst.String()) {
		t.Fatal("the gateway closed the connection")
	}
	seen := map[string]string{}
	for len(seen) < 42 {
		got := c.until(`"ping"`) // any response will do; ping's is one of them
		for _, line := range got {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal([]byte(line), &m) != nil || len(m.ID) == 0 {
				t.Fatalf("not a response: %q", line)
			}
			seen[string(m.ID)] = string(m.Result) + string(m.Error)
		}
		if len(seen) < 42 {
			c.send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
		}
	}
	for i := range 40 {
		if r := seen[strconv.Itoa(i)]; !strings.Contains(r, `"t`+strconv.Itoa(i)+`"`) {
			t.Errorf("call %d: %q", i, r)
		}
	}
	if r, ok := seen[`"blocked"`]; !ok {
		t.Errorf("the cancelled call has no response")
	} else if strings.Contains(r, "slept") {
		t.Errorf("the cancelled call completed: %q", r)
	}
	if n := gateway.FastServed() - before; n != 41 {
		t.Errorf("the fast path served %d calls, want 41", n)
	}
}
