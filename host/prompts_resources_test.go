package host_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
)

// auditHost starts a Host on src (@FIXTURE@ replaced) whose audit records
// are collected.
func auditHost(t *testing.T, src string) (*host.Host, func() []host.AuditRecord) {
	t.Helper()
	cfg, err := config.Parse([]byte(strings.ReplaceAll(src, "@FIXTURE@", testutil.Fixture(t))), &config.Options{Name: "test.toml"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var recs []host.AuditRecord
	h, err := host.New(context.Background(), cfg, &host.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Name: "host", Output: testWriter{t}, Level: hclog.Info}),
		Audit: func(r host.AuditRecord) {
			mu.Lock()
			recs = append(recs, r)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, func() []host.AuditRecord {
		mu.Lock()
		defer mu.Unlock()
		out := recs
		recs = nil
		return out
	}
}

// TestPromptsAndResourcesUnderPolicy: with [policy] default = "deny",
// prompts and resources are hidden and refused unless allowed, exactly as
// tools are; profiles narrow them; every get and read is audited.
func TestPromptsAndResourcesUnderPolicy(t *testing.T) {
	ctx := context.Background()
	const server = `
[servers.fx]
command = "@FIXTURE@"
startup_timeout = "5m"
`
	t.Run("default deny hides and refuses", func(t *testing.T) {
		h, audit := auditHost(t, server+`
[policy]
default = "deny"
allow   = ["fx__*"]
`)
		if ps, err := h.Prompts(ctx); err != nil || len(ps) != 0 {
			t.Errorf("Prompts = %v, %v; want none", ps, err)
		}
		if rs, err := h.Resources(ctx); err != nil || len(rs) != 0 {
			t.Errorf("Resources = %v, %v; want none", rs, err)
		}
		_, err := h.GetPrompt(ctx, "fx__greeting", map[string]string{"name": "Ada", "api_token": "s3cret"})
		var na *host.NotAllowedError
		if !errors.Is(err, host.ErrPromptNotAllowed) || !errors.As(err, &na) || na.Rule != `policy.default "deny"` {
			t.Fatalf("GetPrompt = %v; want ErrPromptNotAllowed by policy.default", err)
		}
		if want := `prompt "fx__greeting" is not allowed in the policy (rule policy.default "deny")`; err.Error() != want {
			t.Errorf("error text %q, want %q", err, want)
		}
		_, err = h.ReadResource(ctx, "fx", "fixture://readme")
		if !errors.Is(err, host.ErrResourceNotAllowed) {
			t.Fatalf("ReadResource = %v; want ErrResourceNotAllowed", err)
		}
		if want := `resource "fixture://readme" of backend "fx" is not allowed in the policy (rule policy.default "deny")`; err.Error() != want {
			t.Errorf("error text %q, want %q", err, want)
		}
		recs := audit()
		if len(recs) != 2 {
			t.Fatalf("%d audit records, want 2: %+v", len(recs), recs)
		}
		p, r := recs[0], recs[1]
		if p.Op != "prompts/get" || p.Prompt != "fx__greeting" || p.Backend != "fx" || p.Decision != "deny" || p.Outcome != host.OutcomeDenied {
			t.Errorf("prompt record %+v", p)
		}
		if strings.Contains(string(p.Args), "s3cret") || !strings.Contains(string(p.Args), `"name":"Ada"`) {
			t.Errorf("prompt arguments not redacted as tool arguments are: %s", p.Args)
		}
		if r.Op != "resources/read" || r.URI != "fixture://readme" || r.Backend != "fx" || r.Decision != "deny" || r.Outcome != host.OutcomeDenied {
			t.Errorf("resource record %+v", r)
		}
	})

	t.Run("allowed by globs, narrowed by a profile", func(t *testing.T) {
		h, audit := auditHost(t, server+`
[policy]
default   = "deny"
allow     = ["fx__*"]
prompts   = ["fx__*"]
resources = ["fx:fixture://**"]

[profiles.narrow]
resources    = ["fx:other://*"]
deny_prompts = ["*__greet*"]
`)
		ps, err := h.Prompts(ctx)
		if err != nil || len(ps) != 1 || ps[0].Name != "fx__greeting" {
			t.Fatalf("Prompts = %+v, %v", ps, err)
		}
		if _, err := h.GetPrompt(ctx, "fx__greeting", map[string]string{"name": "Ada"}); err != nil {
			t.Fatal(err)
		}
		rs, err := h.Resources(ctx)
		if err != nil || len(rs) != 1 {
			t.Fatalf("Resources = %+v, %v", rs, err)
		}
		if res, err := h.ReadResource(ctx, "fx", "fixture://readme"); err != nil || res.Contents[0].Text != "fixture readme" {
			t.Fatalf("ReadResource = %+v, %v", res, err)
		}
		for _, r := range audit() {
			if r.Decision != "allow" || r.Outcome != host.OutcomeOK || !strings.HasPrefix(r.Rule, "policy.") {
				t.Errorf("record %+v; want allowed by a policy rule, ok", r)
			}
		}

		v, err := h.Profile("narrow")
		if err != nil {
			t.Fatal(err)
		}
		if ps, _ := v.Prompts(ctx); len(ps) != 0 {
			t.Errorf("profile prompts %+v; want none (deny_prompts)", ps)
		}
		if rs, _ := v.Resources(ctx); len(rs) != 0 {
			t.Errorf("profile resources %+v; want none", rs)
		}
		_, err = v.GetPrompt(ctx, "fx__greeting", nil)
		var na *host.NotAllowedError
		if !errors.As(err, &na) || na.Rule != `profiles.narrow.deny_prompts[0] "*__greet*"` || na.Profile != "narrow" {
			t.Errorf("profile GetPrompt = %v", err)
		}
		_, err = v.ReadResource(ctx, "fx", "fixture://readme")
		if !errors.As(err, &na) || na.Rule != "profiles.narrow.resources (no glob matches)" {
			t.Errorf("profile ReadResource = %v", err)
		}
		recs := audit()
		if len(recs) != 2 || recs[0].Profile != "narrow" || recs[1].Decision != "deny" {
			t.Errorf("profile records %+v", recs)
		}
	})

	t.Run("unknown prompt", func(t *testing.T) {
		h, audit := auditHost(t, server)
		if _, err := h.GetPrompt(ctx, "fx__nope", nil); !errors.Is(err, host.ErrUnknownTool) {
			t.Errorf("GetPrompt(unknown) = %v", err)
		}
		if recs := audit(); len(recs) != 1 || recs[0].Outcome != host.OutcomeUnknownTool {
			t.Errorf("records %+v", recs)
		}
	})
}
