package gateway

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolhost/toolhost/host"
)

// TestAuditRing: the ring keeps the newest AuditRingSize records, lists
// them newest first with a filter and a limit, bounds a record's size
// (arguments replaced by a note, the error cut on a rune boundary) and
// hands new records to subscribers until they cancel.
func TestAuditRing(t *testing.T) {
	a := newAuditRing()
	var got []string
	cancel := a.subscribe(func(r host.AuditRecord) { got = append(got, r.Tool) })
	for i := range AuditRingSize + 10 {
		a.add(host.AuditRecord{Tool: fmt.Sprintf("t%d", i), Outcome: host.OutcomeOK})
	}
	cancel()
	a.add(host.AuditRecord{Tool: "after", Outcome: host.OutcomeDenied})
	if len(got) != AuditRingSize+10 {
		t.Errorf("the subscriber got %d records, want %d (none after cancel)", len(got), AuditRingSize+10)
	}
	all := a.last(AuditRingSize+100, nil)
	if len(all) != AuditRingSize || all[0].Tool != "after" || all[len(all)-1].Tool != "t11" {
		t.Fatalf("last: %d records, newest %q, oldest %q; want %d, after, t11", len(all), all[0].Tool, all[len(all)-1].Tool, AuditRingSize)
	}
	if ok := a.last(3, func(r *host.AuditRecord) bool { return r.Outcome == host.OutcomeOK }); len(ok) != 3 || ok[0].Tool != fmt.Sprintf("t%d", AuditRingSize+9) {
		t.Errorf("filtered: %+v", ok)
	}

	big := host.AuditRecord{Tool: strings.Repeat("t", 1<<20), URI: strings.Repeat("u", 1<<20), Args: []byte(`{"x":"` + strings.Repeat("a", maxRingArgs) + `"}`), Error: strings.Repeat("é", maxRingError)}
	a.add(big)
	r := a.last(1, nil)[0]
	if len(r.Args) > 100 || !strings.Contains(string(r.Args), "truncated") {
		t.Errorf("args kept: %.100s", r.Args)
	}
	if len(r.Tool) > maxRingName+len("…") || len(r.URI) > maxRingName+len("…") {
		t.Errorf("a 1 MiB tool name and URI kept as %d and %d bytes", len(r.Tool), len(r.URI))
	}
	if len(r.Error) > maxRingError+len("…") || !utf8.ValidString(r.Error) || !strings.HasSuffix(r.Error, "…") {
		t.Errorf("error kept: %d bytes, valid UTF-8 %v", len(r.Error), utf8.ValidString(r.Error))
	}
}

// TestToolStats: per tool calls, errors (all but ok) and nearest-rank
// percentiles, over tools/call records only.
func TestToolStats(t *testing.T) {
	var recs []host.AuditRecord
	for i := 1; i <= 100; i++ {
		out := host.OutcomeOK
		if i%10 == 0 {
			out = host.OutcomeToolError
		}
		recs = append(recs, host.AuditRecord{Tool: "a", Backend: "b", Outcome: out, LatencyMS: float64(i)})
	}
	recs = append(recs, host.AuditRecord{Op: "prompts/get", Prompt: "p"}, host.AuditRecord{Tool: "nope", Outcome: host.OutcomeUnknownTool})
	s := ringToolStats(recs)
	if len(s) != 1 || s[0].Tool != "a" || s[0].Calls != 100 || s[0].Errors != 10 || s[0].P50 != 50 || s[0].P99 != 99 {
		t.Fatalf("toolStats = %+v", s)
	}
}
