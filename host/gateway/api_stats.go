package gateway

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/toolhost/toolhost/host"
)

// Stats keeps, per catalogue tool, the calls, errors and latencies of the
// last 24 hours, for GET /api/v1/mcp/metrics: in one-minute buckets for
// the last hour and 15-minute buckets for the last day (a time range over
// an hour is counted in whole 15-minute buckets). It is fed the Host's
// audit records as Metrics is (Metrics.Record feeds it; Metrics.Stats
// returns it) and its circuit events (Metrics.Observe).
//
// Memory is bounded: a key is a tool the host resolved to a backend (a
// catalogue name: an unknown tool's record has no backend and is not
// counted), at most MaxStatsTools of them (the rest are not counted);
// each keeps at most 60 + 96 buckets of StatsBuckets counters (about
// 26 KB), and buckets out of their window are dropped as new ones come.
type Stats struct {
	mu      sync.Mutex
	tools   map[statsKey]*toolStats
	circuit map[statsKey]circuitState // breakers not closed, by backend and catalogue name ("" for the backend's)
	now     func() time.Time
}

// MaxStatsTools is the most tools Stats counts; StatsWindow the longest
// time range it keeps; StatsBuckets the latency buckets of each minute.
const (
	MaxStatsTools = 1024
	StatsWindow   = 24 * time.Hour
	StatsBuckets  = 40
)

// latencyBase and latencyGrowth make the fixed log-scale latency
// histogram: bucket i holds latencies up to latencyBase*latencyGrowth^i
// milliseconds (0.1 ms ... about 1.1e6 ms); the last holds the rest.
const (
	latencyBase   = 0.1
	latencyGrowth = 1.5
)

type statsKey struct{ backend, tool string }

type toolStats struct {
	minutes  map[int64]*minuteStats // by Unix minute, the last hour
	quarters map[int64]*minuteStats // by Unix quarter hour, the last day
}

// Bucket sizes (seconds) and how many of each are kept.
const (
	minuteSecs  = 60
	quarterSecs = 900
	keepMinutes = 61       // an hour, and the minute under way
	keepQuart   = 24*4 + 1 // a day, and the quarter under way
)

type minuteStats struct {
	calls, errors uint32
	hist          [StatsBuckets]uint32
}

type circuitState struct {
	state string
	since time.Time
}

// NewStats returns empty Stats.
func NewStats() *Stats {
	return &Stats{tools: map[statsKey]*toolStats{}, circuit: map[statsKey]circuitState{}, now: time.Now}
}

// Record counts one audit record of a tools/call. An error is an outcome
// other than "ok" (a tool's isError result counts as an error).
func (s *Stats) Record(r host.AuditRecord) {
	if r.Op != "" || r.Tool == "" || r.Backend == "" || r.Outcome == host.OutcomeUnknownTool {
		return
	}
	k := statsKey{r.Backend, r.Tool}
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.tools[k]
	if ts == nil {
		if len(s.tools) >= MaxStatsTools {
			return
		}
		ts = &toolStats{minutes: map[int64]*minuteStats{}, quarters: map[int64]*minuteStats{}}
		s.tools[k] = ts
	}
	now := s.now().Unix()
	for _, b := range []struct {
		m          map[int64]*minuteStats
		secs, keep int64
	}{{ts.minutes, minuteSecs, keepMinutes}, {ts.quarters, quarterSecs, keepQuart}} {
		slot := r.Time.Unix() / b.secs
		if slot <= now/b.secs-b.keep {
			continue // out of its window already
		}
		m := b.m[slot]
		if m == nil {
			m = &minuteStats{}
			b.m[slot] = m
			for t := range b.m {
				if t <= now/b.secs-b.keep {
					delete(b.m, t)
				}
			}
		}
		m.calls++
		if r.Outcome != host.OutcomeOK {
			m.errors++
		}
		m.hist[latencyBucket(r.LatencyMS)]++
	}
}

// Observe follows a circuit event (of a backend's breaker, tool "", or a
// tool's).
func (s *Stats) Observe(ev host.Event) {
	if ev.Kind != host.EventCircuit {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := statsKey{ev.Backend, ev.Tool}
	if ev.Circuit == "closed" {
		delete(s.circuit, k)
		return
	}
	if len(s.circuit) < MaxStatsTools {
		s.circuit[k] = circuitState{ev.Circuit, ev.Time}
	}
}

// circuitOf returns the state of a breaker (tool "" for the backend's) as
// last seen, and since when; ok false when no event said it was not
// closed.
func (s *Stats) circuitOf(backend, tool string) (circuitState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.circuit[statsKey{backend, tool}]
	return c, ok
}

func latencyBucket(ms float64) int {
	if ms <= latencyBase || math.IsNaN(ms) {
		return 0
	}
	i := int(math.Ceil(math.Log(ms/latencyBase) / math.Log(latencyGrowth)))
	return min(max(i, 0), StatsBuckets-1)
}

// bucketBound is the upper bound of bucket i in milliseconds.
func bucketBound(i int) float64 { return latencyBase * math.Pow(latencyGrowth, float64(i)) }

// ToolStats is one tool's counts over a time range (GET
// /api/v1/mcp/metrics). Latency percentiles are the upper bound of the
// histogram bucket they fall in (a log scale: within 50% of the true
// value), 0 without calls.
type ToolStats struct {
	ServerID  string  `json:"server_id"`
	Name      string  `json:"name"` // catalogue name
	Calls     uint64  `json:"calls"`
	Errors    uint64  `json:"errors"`
	ErrorRate float64 `json:"error_rate"` // errors / calls, 0 without calls
	P50MS     float64 `json:"p50_ms"`
	P90MS     float64 `json:"p90_ms"`
	P99MS     float64 `json:"p99_ms"`
}

// Snapshot returns the counts of every tool with a call in the last d (at
// most StatsWindow), sorted by name, those keep reports true for only.
func (s *Stats) Snapshot(d time.Duration, keep func(backend, tool string) bool) []ToolStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	buckets, secs := func(ts *toolStats) map[int64]*minuteStats { return ts.minutes }, int64(minuteSecs)
	if d > time.Hour {
		buckets, secs = func(ts *toolStats) map[int64]*minuteStats { return ts.quarters }, quarterSecs
	}
	from := s.now().Add(-d).Unix() / secs
	out := []ToolStats{}
	for k, ts := range s.tools {
		if !keep(k.backend, k.tool) {
			continue
		}
		var hist [StatsBuckets]uint64
		st := ToolStats{ServerID: k.backend, Name: k.tool}
		for t, m := range buckets(ts) {
			if t < from {
				continue
			}
			st.Calls += uint64(m.calls)
			st.Errors += uint64(m.errors)
			for i, n := range m.hist {
				hist[i] += uint64(n)
			}
		}
		if st.Calls == 0 {
			continue
		}
		st.ErrorRate = float64(st.Errors) / float64(st.Calls)
		st.P50MS, st.P90MS, st.P99MS = percentile(hist, st.Calls, 0.50), percentile(hist, st.Calls, 0.90), percentile(hist, st.Calls, 0.99)
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ServerID < out[j].ServerID
	})
	return out
}

func percentile(hist [StatsBuckets]uint64, total uint64, q float64) float64 {
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, n := range hist {
		seen += n
		if seen >= rank && n > 0 {
			return math.Round(bucketBound(i)*1000) / 1000
		}
	}
	return 0
}
