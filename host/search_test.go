package host_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/search"
	"github.com/toolhost/toolhost/internal/testutil"
)

func hitNames(hits []host.SearchHit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Name)
	}
	return out
}

// TestSearch: Host.Search and View.Search rank the catalogue, keep to what
// the view allows and follow the catalogue's changes (tools/list_changed,
// DisableTool); bad arguments are their own errors.
func TestSearch(t *testing.T) {
	h := newHost(t, `
[servers.fx]
command = "@FIXTURE@"
args = ["-faults"]

[profiles.math]
allow = ["fx__add"]
`)
	ctx := context.Background()
	hits, err := h.Search(ctx, "sum of two numbers", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].Name != "fx__add" || hits[0].Description == "" || hits[0].InputSchema == nil || hits[0].Score <= 0 {
		t.Fatalf("Search: %+v, want fx__add first with its definition", hits)
	}

	math, err := h.Profile("math")
	if err != nil {
		t.Fatal(err)
	}
	if hits, err := math.Search(ctx, "echo the message back", 10); err != nil || len(hits) != 0 {
		t.Fatalf("a profile's search found tools it does not allow: %v %v", hitNames(hits), err)
	}
	if hits, err := math.Search(ctx, "add numbers", 10); err != nil || len(hits) != 1 || hits[0].Name != "fx__add" {
		t.Fatalf("math.Search: %v %v", hitNames(hits), err)
	}

	// A tool the backend adds at run time is found once the host has it;
	// one it removes is not.
	if _, err := h.CallTool(ctx, "fx__add_tool", map[string]any{"name": "zebra_stripes"}); err != nil {
		t.Fatal(err)
	}
	found := func(q, name string) bool {
		hits, err := h.Search(ctx, q, 5)
		return err == nil && len(hits) > 0 && hits[0].Name == name
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return found("zebra stripes", "fx__zebra_stripes") }, "the added tool is never found")
	if err := h.DisableTool("fx__zebra_stripes"); err != nil {
		t.Fatal(err)
	}
	if found("zebra stripes", "fx__zebra_stripes") {
		t.Fatal("a disabled tool is found")
	}
	if err := h.EnableTool("fx__zebra_stripes"); err != nil {
		t.Fatal(err)
	}
	if !found("zebra stripes", "fx__zebra_stripes") {
		t.Fatal("an enabled tool is not found")
	}
	if _, err := h.CallTool(ctx, "fx__remove_tool", map[string]any{"name": "zebra_stripes"}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		hits, err := h.Search(ctx, "zebra stripes", 5)
		return err == nil && len(hits) == 0
	}, "the removed tool is still found")

	for _, c := range []struct {
		q     string
		limit int
		want  error
	}{
		{"", 5, search.ErrEmptyQuery},
		{strings.Repeat("x", 2000), 5, search.ErrQueryTooLong},
		{"add", 51, search.ErrLimit},
		{"add", -1, search.ErrLimit},
	} {
		if _, err := math.Search(ctx, c.q, c.limit); !errors.Is(err, c.want) {
			t.Errorf("Search(%.10q, %d) = %v, want %v", c.q, c.limit, err, c.want)
		}
	}

	// Concurrent searches share the index (-race).
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if _, err := h.Search(ctx, "echo", 5); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()

	h.Close()
	if _, err := h.Search(ctx, "add", 5); !errors.Is(err, host.ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}
