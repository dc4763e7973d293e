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
	// Old buckets go as new ones come: at most an hour of minutes and a
	// day of quarter hours, whatever the record times.
	for i := range 3 * 24 * 60 {
		now = now.Add(time.Minute)
		rec("b__t", 1, host.OutcomeOK, now.Add(-time.Duration(i%3)*25*time.Hour))
	}
	ts := s.tools[statsKey{"b", "b__t"}]
	if len(ts.minutes) > keepMinutes || len(ts.quarters) > keepQuart {
		t.Errorf("%d minutes and %d quarter hours kept, want at most %d and %d", len(ts.minutes), len(ts.quarters), keepMinutes, keepQuart)
	}
	// A time range counts its own calls: one a minute, a third of them
	// (the others were 25 and 50 hours old).
	for _, c := range []struct {
		d        time.Duration
		min, max uint64
	}{{time.Minute, 0, 2}, {10 * time.Minute, 3, 5}, {time.Hour, 19, 22}, {6 * time.Hour, 119, 127}, {StatsWindow, 479, 487}} {
		got := s.Snapshot(c.d, func(_, tool string) bool { return tool == "b__t" })
		var calls uint64
		if len(got) == 1 {
			calls = got[0].Calls
		}
		if len(got) > 1 || calls < c.min || calls > c.max {
			t.Errorf("calls in the last %v: %+v, want %d to %d", c.d, got, c.min, c.max)
		}
	}
}
