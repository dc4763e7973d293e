package gateway

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
)

// TestStatsBoundedAndPercentiles: Stats counts catalogue tools only (not
// unknown names nor operator actions), at most MaxStatsTools keys, drops
// minutes older than its window, and its percentiles fall in the right
// log-scale bucket.
func TestStatsBoundedAndPercentiles(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s := NewStats()
	s.now = func() time.Time { return now }
	rec := func(tool string, ms float64, outcome string, at time.Time) {
		s.Record(host.AuditRecord{Time: at, Tool: tool, Backend: "b", Outcome: outcome, LatencyMS: ms})
	}
	for i := range 100 {
		outcome := host.OutcomeOK
		if i%10 == 0 {
			outcome = host.OutcomeToolError
		}
		rec("b__t", float64(i+1), outcome, now.Add(-time.Duration(i)*time.Second))
	}
	s.Record(host.AuditRecord{Time: now, Tool: "made_up", Outcome: host.OutcomeUnknownTool, LatencyMS: 1})
	s.Record(host.AuditRecord{Time: now, Tool: "b__t", Backend: "b", Op: "admin/disable_tool", Outcome: host.OutcomeOK})
	got := s.Snapshot(time.Hour, func(string, string) bool { return true })
	if len(got) != 1 {
		t.Fatalf("snapshot: %+v, want one tool", got)
	}
	st := got[0]
	if st.Calls != 100 || st.Errors != 10 || st.ErrorRate != 0.1 {
		t.Errorf("counts: %+v", st)
	}
	// True p50 is 50ms, p90 90ms, p99 99ms: each within one bucket (x1.5) above.
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"p50", st.P50MS, 50}, {"p90", st.P90MS, 90}, {"p99", st.P99MS, 99}} {
		if c.got < c.want || c.got > c.want*latencyGrowth {
			t.Errorf("%s = %v, want in [%v, %v]", c.name, c.got, c.want, c.want*latencyGrowth)
		}
	}
	// Bounded keys.
	for i := range MaxStatsTools + 100 {
		rec(fmt.Sprintf("b__x%d", i), 1, host.OutcomeOK, now)
	}
	if n := len(s.tools); n != MaxStatsTools {
		t.Errorf("%d tools kept, want at most %d", n, MaxStatsTools)
	}
	// Old minutes go as new ones come; a time range counts its own.
	rec("b__t", 1, host.OutcomeOK, now.Add(-30*time.Hour))
	now = now.Add(2 * time.Minute)
	rec("b__t", 1, host.OutcomeOK, now)
	for m := range s.tools[statsKey{"b", "b__t"}].minutes {
		if m < now.Add(-StatsWindow).Unix()/60 {
			t.Errorf("a minute older than the window was kept: %v", time.Unix(m*60, 0))
		}
	}
	if got := s.Snapshot(time.Minute, func(_, tool string) bool { return tool == "b__t" }); len(got) != 1 || got[0].Calls != 1 {
		t.Errorf("last minute: %+v, want 1 call", got)
	}
}
