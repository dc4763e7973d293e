package host_test

//lint:file-ignore SA1019 logging, sampling and roots are deprecated as of protocol 2026-07-28 (SEP-2577) but servers still use them

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
)

// TestServerAsks: the fixture server (over stdio and over HTTP) elicits,
// samples and lists roots during tool calls; the Options handlers learn the
// backend and the call (with the caller's context), the server gets their
// answers and the configured roots, and each elicitation and sampling
// request is audited, with the user's content redacted like arguments.
func TestServerAsks(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	var mu sync.Mutex
	var records []host.AuditRecord
	var elicits []*host.ElicitationRequest
	var samples []*host.SamplingRequest
	type tagKey struct{}
	opts := &host.Options{
		Audit: func(r host.AuditRecord) {
			mu.Lock()
			defer mu.Unlock()
			records = append(records, r)
		},
		Elicit: func(ctx context.Context, req *host.ElicitationRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			elicits = append(elicits, req)
			mu.Unlock()
			if ctx.Value(tagKey{}) != "mine" {
				t.Errorf("the handler's ctx is not the call's")
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "api_token": "s3cr3t-t0ken"}}, nil
		},
		Sample: func(ctx context.Context, req *host.SamplingRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			samples = append(samples, req)
			mu.Unlock()
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "ok"}}, nil
		},
		Roots: []*mcp.Root{{URI: "file:///from-options"}},
	}
	h, _ := policyHost(t, `
[host]
audit_log = "`+audit+`"
roots = ["file:///work"]

[servers.stdio]
command = "@FIXTURE@"
args = ["-client", "-protocol", "2025-11-25"]
roots = ["file:///stdio-a", "file:///stdio-b"]

[servers.http]
url = "`+startFixtureHTTP(t, "-client", "-protocol", "2025-11-25")+`"
`, opts)
	ctx := context.WithValue(host.WithClient(context.Background(), "alice"), tagKey{}, "mine")
	call := func(tool string, args any) string {
		t.Helper()
		res, err := h.CallTool(ctx, tool, args)
		if err != nil {
			t.Fatal(err)
		}
		return text(t, res)
	}
	for _, b := range []string{"stdio", "http"} {
		if got := call(b+"__elicit", nil); got != `action=accept content={"api_token":"s3cr3t-t0ken","name":"Ada"}` {
			t.Errorf("%s elicit: %s", b, got)
		}
		if got := call(b+"__sample", map[string]any{"prompt": "hello"}); got != "model=m text=ok" {
			t.Errorf("%s sample: %s", b, got)
		}
	}
	if got := call("stdio__roots", nil); got != "file:///stdio-a,file:///stdio-b" {
		t.Errorf("stdio roots (its own): %s", got)
	}
	if got := call("http__roots", nil); got != "file:///work" {
		t.Errorf("http roots ([host] roots): %s", got)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(elicits) != 2 || len(samples) != 2 {
		t.Fatalf("%d elicitations, %d samplings", len(elicits), len(samples))
	}
	for i, b := range []string{"stdio", "http"} {
		e, s := elicits[i], samples[i]
		if e.Backend != b || e.Call == nil || e.Call.Tool != b+"__elicit" || e.Call.Client != "alice" || e.Params.Message != "Who are you?" {
			t.Errorf("elicitation request %+v (call %+v)", e, e.Call)
		}
		if s.Backend != b || s.Call == nil || s.Call.Tool != b+"__sample" || s.Params.Messages[0].Content.(*mcp.TextContent).Text != "hello" {
			t.Errorf("sampling request %+v (call %+v)", s, s.Call)
		}
	}
	var asks []host.AuditRecord
	for _, r := range records {
		if r.Op == host.OpElicit || r.Op == host.OpSample {
			asks = append(asks, r)
		}
	}
	if len(asks) != 4 {
		t.Fatalf("audit records of requests: %+v", asks)
	}
	for _, r := range asks {
		wantTool, wantOutcome := r.Backend+"__elicit", host.OutcomeAccept
		if r.Op == host.OpSample {
			wantTool, wantOutcome = r.Backend+"__sample", host.OutcomeOK
		}
		if r.Tool != wantTool || r.Client != "alice" || r.Outcome != wantOutcome {
			t.Errorf("audit record %+v", r)
		}
		if r.Op == host.OpElicit && string(r.Args) != `{"api_token":"[REDACTED]","name":"Ada"}` {
			t.Errorf("elicitation content in the audit: %s", r.Args)
		}
		if r.Op == host.OpSample && (r.ResultBytes == 0 || r.Args != nil) {
			t.Errorf("sampling audit: %+v", r)
		}
	}
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cr3t") {
		t.Error("the audit log holds the elicited secret")
	}
	if !strings.Contains(string(b), `"op":"elicitation/create","tool":"stdio__elicit","backend":"stdio","decision":"none","outcome":"accept"`) {
		t.Errorf("audit log:\n%s", b)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec host.AuditRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("%v: %s", err, line)
		}
	}
}

// TestServerLogLevel: a server's log_level is sent with logging/setLevel;
// its notifications/message reach the backend's logger at their level.
func TestServerLogLevel(t *testing.T) {
	h, logs := policyHost(t, `
[servers.fx]
command = "@FIXTURE@"
args = ["-client", "-protocol", "2025-11-25"]
log_level = "notice"
`, nil)
	res, err := h.CallTool(context.Background(), "fx__log", nil)
	if err != nil || text(t, res) != "logged" {
		t.Fatal(res, err)
	}
	want := []string{
		"[INFO]  host.fx: server log: level=notice data=\"message at notice\" logger=fixture",
		"[WARN]  host.fx: server log: level=warning",
		"[ERROR] host.fx: server log: level=emergency",
		`data="forged\n[ERROR] line\u001b[31mxxx`,
	}
	// The notifications may be handled after the result: wait for them.
	var s, missing string
	testutil.Eventually(t, time.Minute, func() bool {
		s, missing = logs.String(), ""
		for _, w := range want {
			if !strings.Contains(s, w) {
				missing = w
			}
		}
		return missing == ""
	}, func() string { return fmt.Sprintf("log lacks %q:\n%s", missing, s) })
	if strings.Contains(s, "message at info") || strings.Contains(s, "message at debug") {
		t.Errorf("messages below log_level notice were sent:\n%s", s)
	}
}

// TestEverythingAsks: the npm server-everything, over stdio and over
// Streamable HTTP, registers its elicitation, sampling and roots tools only
// for a client that declares those capabilities; through the host they
// work, and its simulated logging reaches the backend's logger at log_level
// debug.
func TestEverythingAsks(t *testing.T) {
	testutil.NeedNpx(t)
	t.Run("stdio", func(t *testing.T) {
		everythingAsks(t, `command = "npx"
args = [`+quoteArgs(append(append([]string{}, testutil.EverythingArgs...), "stdio"))+`]`)
	})
	t.Run("http", func(t *testing.T) {
		everythingAsks(t, `url = "`+testutil.StartEverythingHTTP(t)+`"`)
	})
}

func everythingAsks(t *testing.T, server string) {
	var mu sync.Mutex
	var asked []string
	opts := &host.Options{
		Elicit: func(ctx context.Context, req *host.ElicitationRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, "elicit:"+req.Backend+":"+req.Call.Tool)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace"}}, nil
		},
		Sample: func(ctx context.Context, req *host.SamplingRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, "sample:"+req.Backend+":"+req.Call.Tool)
			return &mcp.CreateMessageResult{Model: "stub-llm", Role: "assistant", Content: &mcp.TextContent{Text: "forty-two"}}, nil
		},
	}
	h, logs := policyHost(t, `
[host]
roots = ["file:///work/project"]

[servers.everything]
`+server+`
log_level = "debug"
`, opts)
	ctx := context.Background()
	// The tools are registered after initialize; calls wait for them.
	call := func(tool string, args any) string {
		t.Helper()
		var res *mcp.CallToolResult
		var err error
		testutil.Eventually(t, time.Minute, func() bool {
			res, err = h.CallTool(ctx, tool, args)
			return !errors.Is(err, host.ErrUnknownTool)
		}, func() string { return err.Error() })
		if err != nil {
			t.Fatal(err)
		}
		return text(t, res)
	}
	if got := call("everything__trigger-elicitation-request", nil); !strings.Contains(got, "Ada Lovelace") {
		t.Errorf("elicitation: %s", got)
	}
	if got := call("everything__trigger-sampling-request", map[string]any{"prompt": "the answer?"}); !strings.Contains(got, "forty-two") || !strings.Contains(got, "stub-llm") {
		t.Errorf("sampling: %s", got)
	}
	if got := call("everything__get-roots-list", nil); !strings.Contains(got, "file:///work/project") {
		t.Errorf("roots: %s", got)
	}
	mu.Lock()
	if want := "elicit:everything:everything__trigger-elicitation-request,sample:everything:everything__trigger-sampling-request"; strings.Join(asked, ",") != want {
		t.Errorf("handlers saw %q, want %q", strings.Join(asked, ","), want)
	}
	mu.Unlock()
	call("everything__toggle-simulated-logging", nil)
	testutil.Eventually(t, time.Minute, func() bool { return strings.Contains(logs.String(), "host.everything: server log: level=") },
		func() string { return "no server log within a minute:\n" + logs.String() })
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, ", ")
}

// TestListRootsSeesTheCall: a Host whose only handler is ListRoots (no
// Elicit, no Sample) still tells it which tool call a server's roots/list
// belongs to, as a gateway relaying its clients' roots needs.
func TestListRootsSeesTheCall(t *testing.T) {
	var mu sync.Mutex
	var reqs []*host.RootsRequest
	opts := &host.Options{
		ListRoots: func(ctx context.Context, req *host.RootsRequest) ([]*mcp.Root, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			reqs = append(reqs, req)
			return []*mcp.Root{{URI: "file:///from-the-call"}}, true, nil
		},
	}
	h, _ := policyHost(t, `
[servers.stdio]
command = "@FIXTURE@"
args = ["-client", "-protocol", "2025-11-25"]
`, opts)
	res, err := h.CallTool(host.WithClient(context.Background(), "alice"), "stdio__roots", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "file:///from-the-call" {
		t.Errorf("roots: %s", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reqs) != 1 || reqs[0].Backend != "stdio" || reqs[0].Call == nil || reqs[0].Call.Tool != "stdio__roots" || reqs[0].Call.Client != "alice" {
		t.Fatalf("roots requests %+v, want one naming the call stdio__roots by alice", reqs)
	}
}
