package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/gateway"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// rawStdio is a client of the gateway's stdio serving (ServeTransport of an
// mcp.IOTransport, what `toolhost serve --stdio` runs) that writes and
// reads raw lines.
type rawStdio struct {
	t     *testing.T
	w     io.WriteCloser
	lines chan string // closed at EOF
}

func startRawStdio(t *testing.T, f *fixture) *rawStdio { return startRawStdioMax(t, f, 0) }

// startRawStdioMax is startRawStdio with the transport's MaxLineLength.
func startRawStdioMax(t *testing.T, f *fixture, maxLine int) *rawStdio {
	t.Helper()
	cr, cw := io.Pipe() // client → gateway
	sr, sw := io.Pipe() // gateway → client
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- f.g.ServeTransport(ctx, &mcp.IOTransport{Reader: cr, Writer: sw, MaxLineLength: maxLine})
	}()
	c := &rawStdio{t: t, w: cw, lines: make(chan string, 1024)}
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		defer close(c.lines)
		br := bufio.NewReaderSize(sr, 1<<20)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				c.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cw.Close()
		cancel()
		<-served
		sr.Close()
		<-pumped
	})
	return c
}

// send writes line; false when the gateway has closed the connection.
func (c *rawStdio) send(line string) bool {
	_, err := io.WriteString(c.w, line+"\n")
	return err == nil
}

// until returns the lines received up to and including the response with
// id (a JSON value, as written), or all up to EOF.
func (c *rawStdio) until(id string) []string {
	c.t.Helper()
	var got []string
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		var line string
		select {
		case l, ok := <-c.lines:
			if !ok {
				return append(got, "EOF")
			}
			line = l
		case <-timer.C:
			c.t.Fatalf("no response with id %s in %v; got %q", id, waitTimeout, got)
		}
		got = append(got, line)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Method == "" && string(m.ID) == id {
			return got
		}
	}
}

// canonical re-encodes a JSON line with sorted keys; the requestState of a
// multi-round result (random) is blanked.
func canonical(line string) string {
	var v any
	if json.Unmarshal([]byte(line), &v) != nil {
		return strings.TrimSpace(line)
	}
	if m, ok := v.(map[string]any); ok {
		if r, ok := m["result"].(map[string]any); ok && r["requestState"] != nil {
			r["requestState"] = "..."
		}
	}
	b, _ := json.Marshal(v)
	// The host numbers the progress tokens it sends upstream.
	return upstreamToken.ReplaceAllString(string(b), "toolhost-N")
}

var upstreamToken = regexp.MustCompile(`toolhost-[0-9]+`)

// rawStep is one line a client sends and the id of the response to wait
// for ("" for a notification: nothing to wait for; "sync" for a line whose
// answer, if any, cannot be named: a ping follows it, and the lines up to
// the ping's response count, in any order).
type rawStep struct{ line, wait string }

// transcript runs steps on a fresh stdio session and returns what came
// back for each, canonical.
func transcript(t *testing.T, f *fixture, maxLine int, steps []rawStep) [][]string {
	c := startRawStdioMax(t, f, maxLine)
	var out [][]string
	for i, s := range steps {
		var got []string
		switch sent := c.send(s.line); {
		case !sent: // the gateway closed the connection: what came before EOF
			got = c.until("none")
		case s.wait == "":
		case s.wait == "sync":
			id := fmt.Sprintf(`"sync-%d"`, i)
			if !c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`) {
				id = "none" // closed: what came before EOF
			}
			got = c.until(id)
			slices.SortFunc(got, strings.Compare)
		default:
			got = c.until(s.wait)
		}
		for j := range got {
			got[j] = canonical(got[j])
		}
		out = append(out, got)
		if len(got) > 0 && got[len(got)-1] == "EOF" {
			break
		}
	}
	return out
}

const legacyInit = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// newMeta is the per-request _meta of a 2026-07-28 client (SEP-2575).
const newMeta = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"`

func callLine(id, params string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`
}

// TestFastStdioFirstLinesAfterBind: the first lines of a connection are
// read only once the fast path is bound to the session, so its first
// calls take the fast path however late the binding comes (it came after
// the go-sdk's session had started reading: a client quick enough had
// its first calls served by the go-sdk, and TestFastStdioMatchesSDK saw
// 0 fast calls of 2 on a busy machine). The binding is delayed here to
// open that window wide.
func TestFastStdioFirstLinesAfterBind(t *testing.T) {
	f := start(t, testConfig)
	t.Cleanup(gateway.DelayBind(100 * time.Millisecond))
	before := gateway.FastServed()
	c := startRawStdio(t, f)
	for _, s := range []rawStep{
		{legacyInit, `"init"`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, ""},
		{callLine(`1`, `{"name":"fx__echo","arguments":{"text":"first"}}`), `1`},
		{callLine(`2`, `{"name":"fx__echo","arguments":{"text":"second"}}`), `2`},
	} {
		if !c.send(s.line) {
			t.Fatalf("the gateway closed the connection at %s", s.line)
		}
		if s.wait != "" {
			c.until(s.wait)
		}
	}
	if n := gateway.FastServed() - before; n != 2 {
		t.Errorf("the fast path served %d of the first 2 calls", n)
	}
}

// TestFastStdioMatchesSDK: every line a client may send on stdio gets the
// same answer, byte for byte up to key order, whether the gateway's fast
// path serves the tools/call requests it may (the default) or the go-sdk
// serves everything (TOOLHOST_GATEWAY_FASTPATH=off); and the fast path
// did serve the calls it should have. Sessions of protocol 2025-06-18
// (initialize) and 2026-07-28 (per-request _meta), well-formed calls,
// calls before initialize, unknown and denied tools, invalid arguments,
// progress, hostile ids and params.
func TestFastStdioMatchesSDK(t *testing.T) {
	f := start(t, testConfig)
	scripts := map[string][]rawStep{
		"2025-06-18": {
			{callLine(`1`, `{"name":"fx__echo","arguments":{"text":"early"}}`), `1`},
			{legacyInit, `"init"`},
			{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, ""},
			{callLine(`3`, `{"name":"fx__echo","arguments":{"text":"hello"}}`), `3`},
			{callLine(`"s-4"`, `{"name":"fx__echo","arguments":{"text":"\u00e9\u2028<&>\"\\"}}`), `"s-4"`},
			{callLine(`""`, `{"name":"fx__echo","arguments":{"text":"empty id"}}`), `""`},
			{callLine(`-13`, `{"name":"fx__echo","arguments":{"text":"negative id"}}`), `-13`},
			{callLine(`9007199254740992`, `{"name":"fx__echo","arguments":{"text":"2^53"}}`), `9007199254740992`},
			{callLine(`5`, `{"name":"fx__nope","arguments":{}}`), `5`},
			{callLine(`6`, `{"name":"fx__add","arguments":{"a":1,"b":2}}`), `6`},
			{callLine(`7`, `{"name":"fx__fail","arguments":{}}`), `7`},
			{callLine(`8`, `{"name":"fx__crash"}`), `8`},
			{callLine(`9`, `{"name":"fx__echo"}`), `9`},
			{callLine(`10`, `{"name":"fx__echo","arguments":{"text":5}}`), `10`},
			{callLine(`11`, `{"name":"fx__progress","arguments":{"steps":2},"_meta":{"progressToken":"tok"}}`), `11`},
			{callLine(`12`, `{"name":"fx__echo","arguments":{"text":"x"},"_meta":{"progressToken":7,"other":{"k":[1,2]}}}`), `12`},
			{callLine(`13`, `{"name":"fx__echo","arguments":{"text":"x"},`+newMeta+`}}`), `13`},
			// Lines the fast path leaves to the go-sdk.
			{callLine(`14`, `{"name":"fx__echo","arguments":[1]}`), `14`},
			{callLine(`15`, `{"name":5}`), `15`},
			{callLine(`16`, `{"name":"fx__echo","arguments":{"text":"x"},"task":{}}`), `16`},
			{callLine(`17`, `{"name":"fx__echo","arguments":null}`), `17`},
			{`{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"after"}}}`, `19`},
			// The go-sdk ends the connection.
			{`{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"spaced"}}}  `, "sync"},
		},
		"2026-07-28": {
			{`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + newMeta + `}}}`, `1`},
			{callLine(`2`, `{`+newMeta+`},"name":"fx__echo","arguments":{"text":"hello"}}`), `2`},
			{callLine(`3`, `{`+newMeta+`},"name":"fx__nope","arguments":{}}`), `3`},
			{callLine(`4`, `{`+newMeta+`,"progressToken":"p"},"name":"fx__progress","arguments":{"steps":3}}`), `4`},
			{callLine(`5`, `{`+newMeta+`,"io.modelcontextprotocol/logLevel":"debug"},"name":"fx__echo","arguments":{"text":"log"}}`), `5`},
			{callLine(`6`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"fx__echo","arguments":{"text":"no caps"}}`), `6`},
			{callLine(`7`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}},"name":"fx__echo","arguments":{}}`), `7`},
			{callLine(`8`, `{"name":"fx__echo","arguments":{"text":"no meta"}}`), `8`},
			{callLine(`9`, `{`+newMeta+`},"name":"fx__add","arguments":{"a":2,"b":3}}`), `9`},
			{callLine(`10`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":5}},"name":"fx__echo","arguments":{"text":"bad caps"}}`), `10`},
			{callLine(`11`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null},"name":"fx__echo","arguments":{"text":"null caps"}}`), `11`},
			{callLine(`12`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":7}},"name":"fx__echo","arguments":{"text":"bad info"}}`), `12`},
			{callLine(`13`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"n","version":"1","icons":[]}},"name":"fx__echo","arguments":{"text":"other caps"}}`), `13`},
			{callLine(`14`, `{"_meta":[1],"name":"fx__echo","arguments":{"text":"meta array"}}`), `14`},
			{callLine(`15`, `{"_meta":null,"name":"fx__echo","arguments":{"text":"meta null"}}`), `15`},
			{callLine(`16`, `{`+newMeta+`},"name":"fx__echo","arguments":{}}`), `16`},
			{callLine(`17`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":"yes"}}},"name":"fx__echo","arguments":{"text":"odd caps"}}`), `17`},
		},
	}
	// Lines the go-sdk's decoder reads in a way the fast path must not
	// change: a message over several lines (everything after it goes to
	// the go-sdk), a line beyond the transport's limit (the go-sdk ends
	// the connection), blank lines and CRLF.
	legacy := []rawStep{{legacyInit, `"init"`}, {`{"jsonrpc":"2.0","method":"notifications/initialized"}`, ""}}
	scripts["multi-line"] = append(slices.Clone(legacy),
		rawStep{callLine(`1`, `{"name":"fx__echo","arguments":{"text":"before"}}`), `1`},
		rawStep{"{\"jsonrpc\":\"2.0\",\"id\":2,\n\"method\":\"tools/call\",\"params\":{\"name\":\"fx__echo\",\"arguments\":{\"text\":\"spread\"}}}", `2`},
		rawStep{callLine(`3`, `{"name":"fx__echo","arguments":{"text":"after"}}`), `3`},
	)
	scripts["blank-and-crlf"] = append(slices.Clone(legacy),
		rawStep{"", ""},
		rawStep{callLine(`1`, `{"name":"fx__echo","arguments":{"text":"crlf"}}`) + "\r", `1`},
		rawStep{"   ", ""},
		rawStep{callLine(`2`, `{"name":"fx__echo","arguments":{"text":"after"}}`), `2`},
	)
	scripts["too-long"] = append(slices.Clone(legacy),
		rawStep{callLine(`1`, `{"name":"fx__echo","arguments":{"text":"short"}}`), `1`},
		rawStep{callLine(`2`, `{"name":"fx__echo","arguments":{"text":"`+strings.Repeat("x", 8192)+`"}}`), "sync"},
	)
	for name, steps := range scripts {
		t.Run(name, func(t *testing.T) {
			maxLine := 0
			if name == "too-long" {
				maxLine = 4096
			}
			before := gateway.FastServed()
			fast := transcript(t, f, maxLine, steps)
			served := gateway.FastServed() - before
			t.Setenv(gateway.FastPathEnv, "off")
			before = gateway.FastServed()
			sdk := transcript(t, f, maxLine, steps)
			if n := gateway.FastServed() - before; n != 0 {
				t.Errorf("with %s=off the fast path served %d calls", gateway.FastPathEnv, n)
			}
			if want := map[string]int64{"multi-line": 1, "blank-and-crlf": 2, "too-long": 1}[name]; want > 0 && served != want {
				t.Errorf("the fast path served %d calls, want %d", served, want)
			} else if want == 0 && served < 3 {
				t.Errorf("the fast path served %d calls, want at least 3", served)
			}
			for i := range max(len(fast), len(sdk)) {
				var a, b []string
				if i < len(fast) {
					a = fast[i]
				}
				if i < len(sdk) {
					b = sdk[i]
				}
				if !slices.Equal(a, b) {
					t.Errorf("step %d %s:\nfast path: %s\ngo-sdk:    %s", i, steps[i].line, strings.Join(a, "\n           "), strings.Join(b, "\n           "))
				}
			}
		})
	}
}

// TestFastStdioCancelLimitDisconnect: on the fast path, max_concurrent
// refuses a call beyond the bound at once (CodeTooManyRequests),
// notifications/cancelled for a call in flight cancels its upstream call
// and frees its slot, and a client that goes away mid-call has its call
// cancelled and the session ended.
func TestFastStdioCancelLimitDisconnect(t *testing.T) {
	f := start(t, testConfig+"\n[serve]\nmax_concurrent = 1\n")
	c := startRawStdio(t, f)
	before := gateway.FastServed()
	c.send(legacyInit)
	c.until(`"init"`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	calls0, cancelled0 := stats(t, f.h)
	polls := int64(0)
	reached := func() bool { polls++; n, _ := stats(t, f.h); return n-calls0-polls >= 1 }
	c.send(callLine(`1`, `{"name":"fx__sleep","arguments":{"ms":600000}}`))
	eventually(t, "the sleep call to reach the fixture", reached)

	c.send(callLine(`2`, `{"name":"fx__echo","arguments":{"text":"over the bound"}}`))
	got := c.until(`2`)
	var refused struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(got[len(got)-1]), &refused) != nil || refused.Error.Code != gateway.CodeTooManyRequests || !strings.Contains(refused.Error.Message, "max_concurrent") {
		t.Fatalf("a call beyond max_concurrent = 1: %q, want error %d naming max_concurrent", got, gateway.CodeTooManyRequests)
	}

	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"changed my mind"}}`)
	c.until(`1`)
	eventually(t, "the fixture to see the call cancelled", func() bool { _, n := stats(t, f.h); return n > cancelled0 })
	c.send(callLine(`3`, `{"name":"fx__echo","arguments":{"text":"after"}}`))
	if got := c.until(`3`); !strings.Contains(got[len(got)-1], `"after"`) {
		t.Fatalf("a call after the cancelled one: %q", got)
	}

	_, cancelled1 := stats(t, f.h)
	calls0, polls = 0, 0
	calls0, _ = stats(t, f.h)
	c.send(callLine(`4`, `{"name":"fx__sleep","arguments":{"ms":600000}}`))
	eventually(t, "the second sleep call to reach the fixture", reached)
	c.w.Close() // the client goes away
	if got := c.until("none"); got[len(got)-1] != "EOF" {
		t.Fatalf("after the client went away: %q, want the connection closed", got)
	}
	eventually(t, "the fixture to see the call cancelled", func() bool { _, n := stats(t, f.h); return n > cancelled1 })
	if n := gateway.FastServed() - before; n < 4 {
		t.Errorf("the fast path served %d calls, want 4", n)
	}
}

// pipeSession connects client to f's gateway over the stdio serving (an
// mcp.IOTransport on pipes, what `toolhost serve --stdio` runs): the fast
// path.
func pipeSession(t *testing.T, f *fixture, client *mcp.Client, opts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	cr, cw := io.Pipe()
	sr, sw := io.Pipe()
	return sessionOn(t, f, client, opts, &mcp.IOTransport{Reader: sr, Writer: cw}, &mcp.IOTransport{Reader: cr, Writer: sw})
}

// TestFastStdioRealClient: the go-sdk client, at protocol 2026-07-28 (its
// default) and 2025-11-25, over the stdio fast path: calls, progress
// relayed, an upstream server's elicitation reaching
// the client (as a request during the call, or in the result for
// 2026-07-28) and its answer the server, and 32 concurrent calls; the
// audit names the client "stdio".
func TestFastStdioRealClient(t *testing.T) {
	f := start(t, unpinned+testConfig[strings.Index(testConfig, "[servers.fx]"):strings.Index(testConfig, "[policy]")])
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("version="+version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			var mu sync.Mutex
			var progress []float64
			client := mcp.NewClient(&mcp.Implementation{Name: "t"}, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					progress = append(progress, req.Params.Progress)
					mu.Unlock()
				},
			})
			var opts *mcp.ClientSessionOptions
			if version != "" {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
			}
			before := gateway.FastServed()
			cs := pipeSession(t, f, client, opts)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask__elicit", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := text(res), `action=accept content={"name":"Ada"}`; res.IsError || got != want {
				t.Errorf("elicitation: %q (isError %v), want %q", got, res.IsError, want)
			}
			params := &mcp.CallToolParams{Name: "fx__progress", Arguments: map[string]any{"steps": 3}}
			params.SetProgressToken("p")
			res, err = cs.CallTool(ctx, params)
			if err != nil || res.IsError {
				t.Fatal(err, res)
			}
			// The go-sdk client hands notifications to their handler
			// apart from responses, so their order on the wire (progress
			// before the result) is TestFastStdioMatchesSDK's to check;
			// here they arrive, in order.
			eventually(t, "3 progress reports", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return slices.Equal(progress, []float64{1, 2, 3})
			})
			var wg sync.WaitGroup
			for i := range 32 {
				wg.Go(func() {
					want := fmt.Sprint("call ", i)
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": want}})
					if err != nil || res.IsError || text(res) != want {
						t.Errorf("concurrent call %d: %v %v", i, err, res)
					}
				})
			}
			wg.Wait()
			if n := gateway.FastServed() - before; n < 33 {
				t.Errorf("the fast path served %d calls, want at least 33", n)
			}
		})
	}
	for _, r := range f.records() {
		if r.Client != gateway.ClientStdio {
			t.Errorf("audit record of %s names client %q, want %q", r.Tool, r.Client, gateway.ClientStdio)
		}
	}
}

// TestFastStdioReusesGoroutines: sequential calls on the stdio fast path
// run on goroutines the session keeps (internal/gopool), not on new ones
// per call: a new goroutine grows its stack to a call's depth again, by
// copies that were 9% of the gateway child's CPU. The go-sdk client's
// default capabilities (roots) make each 2026-07-28 call detached by
// multiRound, so both of the path's hand-offs (the reading, the detached
// call) are counted. The metric counts every goroutine of the process
// (the client's, the fixture transport's), so the bound is per call, well
// under the 2 a call made before.
func TestFastStdioReusesGoroutines(t *testing.T) {
	f := start(t, testConfig)
	cs := pipeSession(t, f, mcp.NewClient(&mcp.Implementation{Name: "reuse"}, nil), nil)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	call := func() {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "x"}})
		if err != nil || res.IsError {
			t.Fatal(err, res)
		}
	}
	for range 10 { // the pool's workers start
		call()
	}
	created := func() uint64 {
		s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	const n = 200
	served, detached, before := gateway.FastServed(), gateway.MultiRoundDetached(), created()
	for range n {
		call()
	}
	perCall := float64(created()-before) / n
	if gateway.FastServed()-served < n || gateway.MultiRoundDetached()-detached < n {
		t.Fatalf("of %d calls, %d took the fast path and %d were detached; want all", n, gateway.FastServed()-served, gateway.MultiRoundDetached()-detached)
	}
	t.Logf("%.2f goroutines created per call", perCall)
	if perCall > 0.5 {
		t.Errorf("%.2f goroutines created per sequential call; want the session's kept ones reused (< 0.5)", perCall)
	}
}

// TestFastStdioReadsWhileACallComputes: a fast call keeps its connection's
// reading until it waits on its backend (internal/handoff); one that
// waits elsewhere — here a Wasm plugin that computes forever, in process —
// gives it up after a short delay, so the client's next lines are read
// meanwhile: a call to another backend is answered, and a cancellation
// ends the computing call. Calls that end at once (the in-process echo)
// keep the reading, one after another on one goroutine.
func TestFastStdioReadsWhileACallComputes(t *testing.T) {
	plugins := filepath.Join(testutil.Root(), "testdata", "plugins")
	f := start(t, testConfig+fmt.Sprintf(`
[plugins.loop]
path = %q
timeout = "10m"

[plugins.echo]
path = %q
`, wasmbuild.Build(t, plugins, "./loop"), wasmbuild.Build(t, plugins, "./pdkecho")))
	c := startRawStdio(t, f)
	before := gateway.FastServed()
	c.send(legacyInit)
	c.until(`"init"`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i := range 20 {
		id := strconv.Itoa(100 + i)
		c.send(callLine(id, `{"name":"echo__echo","arguments":{"text":"in process"}}`))
		if got := c.until(id); !strings.Contains(got[len(got)-1], `"in process"`) {
			t.Fatalf("call %s to the in-process echo: %q", id, got)
		}
	}
	c.send(callLine(`1`, `{"name":"loop__loop","arguments":{}}`))
	c.send(callLine(`2`, `{"name":"fx__echo","arguments":{"text":"meanwhile"}}`))
	if got := c.until(`2`); !strings.Contains(got[len(got)-1], `"meanwhile"`) {
		t.Fatalf("a call while another computes: %q", got)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"too long"}}`)
	c.send(callLine(`3`, `{"name":"fx__echo","arguments":{"text":"after"}}`))
	if got := c.until(`3`); !strings.Contains(got[len(got)-1], `"after"`) {
		t.Fatalf("a call after the cancellation: %q", got)
	}
	if n := gateway.FastServed() - before; n < 23 {
		t.Errorf("the fast path served %d calls, want 23", n)
	}
}
