package host_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
)

// TestWarningsOnlyOnAKnownCatalogue: a [tools.NAME] table is reported as
// naming no tool only when the catalogue can answer for NAME (no backend's
// prefix fits it, or every backend whose prefix fits it has listed its
// tools), never because its backend was left unstarted (start = "lazy", or
// a CLI call that starts only its own backends); a profile's recommended
// backend that is idle is not "not ready"; and no warning is logged with a
// nil error (issue 20, item 2).
func TestWarningsOnlyOnAKnownCatalogue(t *testing.T) {
	h, logs := policyHost(t, `
[servers.fx]
command = "@FIXTURE@"

[servers.lazy]
command = "@FIXTURE@"
start = "lazy"

[tools.fx__echo]
retry = true
[tools.fx__ehco]
retry = true
[tools.nobody__echo]
retry = true
[tools.lazy__echo]
retry = true
[tools.lazy__ehco]
retry = true
[tools.fx__add]
fallback = "lazy__add"
[tools.fx__sleep]
fallback = "lazy__nope"

[profiles.p]
recommends = ["lazy"]
`, nil)
	want := []string{
		`[tools.fx__ehco] (line 11): no tool "fx__ehco" in the catalogue`,
		`[tools.nobody__echo] (line 13): no tool "nobody__echo" in the catalogue`,
	}
	if got := h.ToolOptionProblems(); !slices.Equal(got, want) {
		t.Errorf("with lazy idle: ToolOptionProblems\n%q\nwant\n%q", got, want)
	}
	for _, w := range want {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("New did not log %q", w)
		}
	}
	for _, n := range []string{"lazy__echo", "lazy__ehco", "lazy__add", "lazy__nope"} {
		if strings.Contains(logs.String(), n+`" `) {
			t.Errorf("New reported %s, whose backend has not started", n)
		}
	}
	if _, err := h.Profile("p"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "profile recommends") {
		t.Errorf("an idle recommended backend was reported as not ready:\n%s", logs)
	}

	// Once lazy has listed its tools, its names are checked too.
	if _, err := h.CallTool(context.Background(), "lazy__echo", map[string]any{"text": "hi"}); err != nil {
		t.Fatal(err)
	}
	want = []string{
		`[tools.fx__ehco] (line 11): no tool "fx__ehco" in the catalogue`,
		`[tools.fx__sleep] (line 21): fallback "lazy__nope" is not in the catalogue`,
		`[tools.lazy__ehco] (line 17): no tool "lazy__ehco" in the catalogue`,
		`[tools.nobody__echo] (line 13): no tool "nobody__echo" in the catalogue`,
	}
	if got := h.ToolOptionProblems(); !slices.Equal(got, want) {
		t.Errorf("with lazy started: ToolOptionProblems\n%q\nwant\n%q", got, want)
	}
	if strings.Contains(logs.String(), "<nil>") {
		t.Errorf("a log line has a nil error:\n%s", logs)
	}
}

// TestRecommendedDownIsWarnedWithItsError: a recommended backend that
// failed is warned about, with its error (never <nil>).
func TestRecommendedDownIsWarnedWithItsError(t *testing.T) {
	h, logs := policyHost(t, `
[servers.broken]
command = "toolhost-no-such-program"
max_restarts = 0

[profiles.p]
recommends = ["broken"]
`, nil)
	if st := h.Status(); len(st) != 1 || st[0].State != host.StateFailed {
		t.Fatalf("status %+v, want broken failed", st)
	}
	if _, err := h.Profile("p"); err != nil {
		t.Fatal(err)
	}
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "profile recommends a backend that is not ready") {
			line = l
		}
	}
	if line == "" || !strings.Contains(line, "backend=broken") || !strings.Contains(line, "toolhost-no-such-program") || strings.Contains(line, "<nil>") {
		t.Errorf("warning %q, want one naming broken and its error", line)
	}
}
