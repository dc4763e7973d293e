package host_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
)

// TestRewriteWarnedOncePerStart: the "tool name rewritten" warning is
// logged once per name per start, not on every catalogue rebuild (each
// list_changed of any backend rebuilds it).
func TestRewriteWarnedOncePerStart(t *testing.T) {
	events := make(chan host.Event, 100)
	h, logs := policyHost(t, `
[servers.fx]
command = "@FIXTURE@"
args = ["-faults"]

[servers.other]
command = "@FIXTURE@"
`, &host.Options{Events: func(ev host.Event) {
		if ev.Kind == host.EventCatalogue {
			events <- ev
		}
	}})
	ctx := context.Background()
	added := func(name string) {
		t.Helper()
		if _, err := h.CallTool(ctx, "fx__add_tool", map[string]any{"name": name}); err != nil {
			t.Fatal(err)
		}
		for {
			select {
			case ev := <-events:
				for _, a := range ev.Added {
					if a == "fx__"+strings.ReplaceAll(name, ".", "_") {
						return
					}
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s never joined the catalogue", name)
			}
		}
	}
	added("dotted.name")
	for i := range 4 {
		added(fmt.Sprint("plain", i))
		if _, err := h.Tools(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logs.String(), "tool name rewritten"); n != 1 {
		t.Errorf("%d rewrite warnings for one rewritten name, want 1:\n%s", n, logs.String())
	}
}
