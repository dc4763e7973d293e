package gateway_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
)

const templatesConfig = `
[servers.fx]
command = "@FIXTURE@"
args    = ["-templates"]
startup_timeout = "5m"

[profiles.review]
resources    = ["fx:fixture://readme"]
deny_prompts = ["fx__greeting"]
`

// TestTemplatesAndCompletion: resource templates are listed and a URI made
// from one is read through the gateway; completion/complete reaches the
// backend with its own prompt name, for a prompt and for a template; a
// profile whose resource policy excludes the template sees none and may
// not complete it, and a denied prompt may not be completed either; every
// completion is audited.
func TestTemplatesAndCompletion(t *testing.T) {
	f := start(t, templatesConfig)
	cs := memSession(t, f, mcp.NewClient(&mcp.Implementation{Name: "t"}, nil), nil)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	lt, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lt.ResourceTemplates) != 1 || lt.ResourceTemplates[0].URITemplate != "fixture://item/{id}" {
		t.Fatalf("resources/templates/list = %+v, want fixture://item/{id}", lt.ResourceTemplates)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://item/7"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].Text != "item 7" {
		t.Fatalf("read fixture://item/7 = %+v", rr.Contents)
	}

	for _, tc := range []struct {
		ref  *mcp.CompleteReference
		arg  mcp.CompleteParamsArgument
		want []string
	}{
		{&mcp.CompleteReference{Type: "ref/prompt", Name: "fx__greeting"}, mcp.CompleteParamsArgument{Name: "name", Value: "al"}, []string{"prompt:greeting", "alice", "albert"}},
		{&mcp.CompleteReference{Type: "ref/resource", URI: "fixture://item/{id}"}, mcp.CompleteParamsArgument{Name: "id", Value: "1"}, []string{"resource:fixture://item/{id}", "1", "12"}},
	} {
		res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: tc.ref, Argument: tc.arg})
		if err != nil {
			t.Fatalf("complete %+v: %v", tc.ref, err)
		}
		if !slices.Equal(res.Completion.Values, tc.want) {
			t.Errorf("complete %+v = %q, want %q", tc.ref, res.Completion.Values, tc.want)
		}
	}
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "fx__nope"}, Argument: mcp.CompleteParamsArgument{Name: "x"}}); err == nil {
		t.Error("completion for an unknown prompt succeeded")
	}

	v, err := f.h.Profile("review")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := v.ResourceTemplates(ctx)
	if err != nil || len(ts) != 0 {
		t.Errorf("review's templates = %v, %v; want none", ts, err)
	}
	_, err = v.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "fixture://item/{id}"}, Argument: mcp.CompleteParamsArgument{Name: "id"}})
	if !errors.Is(err, host.ErrResourceNotAllowed) {
		t.Errorf("review completes the template: %v; want ErrResourceNotAllowed", err)
	}
	_, err = v.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "fx__greeting"}, Argument: mcp.CompleteParamsArgument{Name: "name"}})
	if !errors.Is(err, host.ErrPromptNotAllowed) {
		t.Errorf("review completes a denied prompt: %v; want ErrPromptNotAllowed", err)
	}
	_, err = v.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/nope"}})
	if !errors.Is(err, host.ErrInvalidArguments) {
		t.Errorf("unknown ref type: %v; want ErrInvalidArguments", err)
	}

	var completes, denied int
	for _, r := range f.records() {
		if r.Op == host.OpComplete {
			completes++
			if r.Decision == "deny" {
				denied++
			}
		}
	}
	if completes != 6 || denied != 2 {
		t.Errorf("audit: %d completion records (%d denied), want 6 (2 denied)", completes, denied)
	}
}
