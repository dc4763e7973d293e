package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/transport"
)

// failing is a Transport whose tools "fail" and "also" fail with an error
// of its own (a backend failure: it counts for the breakers and takes a
// fallback), whose tool "big" returns more than a small max_output, whose
// tool "slow" answers when its deadline passes, and whose prompt and
// resource fail to render and read.
type failing struct{}

var errBoom = errors.New("boom")

func (failing) Connect(context.Context) (*mcp.InitializeResult, error) {
	return &mcp.InitializeResult{ServerInfo: &mcp.Implementation{Name: "failing", Version: "1"}}, nil
}
func (failing) ListTools(context.Context) ([]*mcp.Tool, error) {
	schema := map[string]any{"type": "object"}
	return []*mcp.Tool{{Name: "fail", InputSchema: schema}, {Name: "also", InputSchema: schema}, {Name: "big", InputSchema: schema}, {Name: "slow", InputSchema: schema}}, nil
}
func (failing) CallTool(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	if p.Name == "slow" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if p.Name == "big" {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 100)}}}, nil
	}
	return nil, errBoom
}
func (failing) ListResources(context.Context) ([]*mcp.Resource, error) {
	return []*mcp.Resource{{URI: "u://x", Name: "x"}}, nil
}
func (failing) ReadResource(context.Context, *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return nil, errBoom
}
func (failing) ListPrompts(context.Context) ([]*mcp.Prompt, error) {
	return []*mcp.Prompt{{Name: "greet"}}, nil
}
func (failing) GetPrompt(context.Context, *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return nil, errBoom
}
func (failing) Ping(context.Context) error { return nil }
func (failing) Close() error               { return nil }

// TestErrorsNamedOnce pins the text of the errors the pipeline returns for
// each kind of operation, and the error of their audit records: a tool's
// failures are named once with its catalogue name (a fallback's by the
// fallback's, the primary's record by the primary's), a prompt's and a
// resource's failures at the backend in their own words, and the errors
// that name what they refuse (unknown tool, not allowed) are not named
// again.
func TestErrorsNamedOnce(t *testing.T) {
	ctx := context.Background()
	cfg, err := config.Parse([]byte(`
[servers.down]
command = "/nonexistent/toolhost-test-down"
max_restarts = 0

[tools.f__fail]
fallback = "f__also"

[profiles.needy]
requires = ["down"]

[profiles.narrow]
allow = ["f__fail"]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var recs []host.AuditRecord
	h, err := host.New(ctx, cfg, &host.Options{Audit: func(r host.AuditRecord) {
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	one := 1
	opts := &host.BackendOptions{MaxOutput: 50}
	opts.Supervision.CircuitBreaker.Failures = 1000
	opts.Supervision.MaxRestarts = &one
	if err := h.Add(ctx, "f", func() transport.Transport { return failing{} }, opts); err != nil {
		t.Fatal(err)
	}
	if st := statusOf(h, "down"); st.State != host.StateFailed {
		t.Fatalf("down: %s, want failed", st.State)
	}
	// g's circuit opens at its first failure.
	gopts := &host.BackendOptions{Timeout: 100 * time.Millisecond}
	gopts.Supervision.CircuitBreaker.Failures = 1
	gopts.Supervision.MaxRestarts = &one
	if err := h.Add(ctx, "g", func() transport.Transport { return failing{} }, gopts); err != nil {
		t.Fatal(err)
	}
	needy, err := h.Profile("needy")
	if err != nil {
		t.Fatal(err)
	}
	narrow, err := h.Profile("narrow")
	if err != nil {
		t.Fatal(err)
	}
	const required = `required backend unavailable: profile "needy" requires backend "down", which is not ready; try again once it is: `
	downErr := statusOf(h, "down").LastError

	type result struct {
		err     string
		records []string // the Error of each audit record, in order
		prefix  bool     // err (and each record's) is a prefix of the text
	}
	for _, tc := range []struct {
		name string
		do   func() error
		want result
	}{
		{"tool fails over to a fallback that fails", func() error {
			_, err := h.CallTool(ctx, "f__fail", nil)
			return err
		}, result{"f__also: boom", []string{"f__also: boom", "f__fail: boom"}, false}},
		{"tool over max_output", func() error {
			_, err := h.CallTool(ctx, "f__big", nil)
			return err
		}, result{`f__big: result of 139 bytes exceeds BackendOptions.MaxOutput (50 bytes) of backend "f": backend result exceeds max_output; raise it or ask for less`, nil, false}},
		{"tool not allowed", func() error {
			_, err := narrow.CallTool(ctx, "f__also", nil)
			return err
		}, result{`tool "f__also" is not allowed in profile "narrow" (rule profiles.narrow.allow (no glob matches)); calling it again will fail the same way: use one of the tools in the list of available tools`, nil, false}},
		{"tool past its deadline", func() error {
			_, err := h.CallTool(ctx, "g__slow", nil)
			return err
		}, result{"g__slow: context deadline exceeded: the backend's timeout (100ms) passed", nil, false}},
		{"circuit open", func() error {
			_, err := h.CallTool(ctx, "g__fail", nil)
			return err
		}, result{`g__fail: circuit open for backend "g" after 1 consecutive failures: calls fail fast until `, nil, true}},
		{"arguments not an object", func() error {
			_, err := h.CallTool(ctx, "f__also", json.RawMessage(`[1]`))
			return err
		}, result{"f__also: invalid tool arguments: want a JSON object, got an array", nil, false}},
		{"arguments not JSON", func() error {
			_, err := h.CallTool(ctx, "f__also", `{"a":`)
			return err
		}, result{"f__also: invalid tool arguments: want a JSON object, got invalid JSON (unexpected end of JSON input)", nil, false}},
		{"unknown tool", func() error {
			_, err := h.CallTool(ctx, "f__nope", nil)
			return err
		}, result{`unknown tool "f__nope"; no available tool has a similar name: use a name from the list of available tools, exactly as listed`, nil, false}},
		{"required backend down (tool)", func() error {
			_, err := needy.CallTool(ctx, "f__also", nil)
			return err
		}, result{"f__also: " + required + downErr, nil, false}},
		{"prompt fails at the backend", func() error {
			_, err := h.GetPrompt(ctx, "f__greet", nil)
			return err
		}, result{`prompt "f__greet": boom`, nil, false}},
		{"unknown prompt", func() error {
			_, err := h.GetPrompt(ctx, "f__nope", nil)
			return err
		}, result{`prompt "f__nope": unknown tool`, nil, false}},
		{"required backend down (prompt)", func() error {
			_, err := needy.GetPrompt(ctx, "f__greet", nil)
			return err
		}, result{"f__greet: " + required + downErr, nil, false}},
		{"resource fails at the backend", func() error {
			_, err := h.ReadResource(ctx, "f", "u://x")
			return err
		}, result{`resource "u://x" of f: boom`, nil, false}},
		{"resource of no backend", func() error {
			_, err := h.ReadResource(ctx, "zz", "u://x")
			return err
		}, result{`backend unavailable: no backend "zz"`, nil, false}},
		{"required backend down (resource)", func() error {
			_, err := needy.ReadResource(ctx, "f", "u://x")
			return err
		}, result{"u://x: " + required + downErr, nil, false}},
		{"completion without a ref", func() error {
			_, err := h.Complete(ctx, &mcp.CompleteParams{})
			return err
		}, result{"completion/complete: invalid tool arguments: no ref", nil, false}},
		{"completion of an unknown prompt", func() error {
			_, err := h.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "f__nope"}})
			return err
		}, result{`completion/complete: prompt "f__nope": unknown tool`, nil, false}},
		{"completion a backend cannot do", func() error {
			_, err := h.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "f__greet"}})
			return err
		}, result{"completion/complete: capability not supported by backend", nil, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			recs = nil
			mu.Unlock()
			err := tc.do()
			same := func(got, want string) bool {
				if tc.want.prefix {
					return strings.HasPrefix(got, want)
				}
				return got == want
			}
			if err == nil || !same(err.Error(), tc.want.err) {
				t.Errorf("error %v\nwant        %s", err, tc.want.err)
			}
			mu.Lock()
			defer mu.Unlock()
			want := tc.want.records
			if want == nil {
				want = []string{tc.want.err}
			}
			var got []string
			for _, r := range recs {
				got = append(got, r.Error)
			}
			ok := len(got) == len(want)
			for i := 0; ok && i < len(got); i++ {
				ok = same(got[i], want[i])
			}
			if !ok {
				t.Errorf("audit records' errors:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
