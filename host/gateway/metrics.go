package gateway

import (
	"net/http"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toolhost/toolhost/host"
)

// Metrics is the gateway's Prometheus registry (GET /metrics). Feed it the
// Host's audit records (Record, as host.Options.Audit) and events
// (Observe, or Attach). Label values are bounded: backend, tool and
// profile names come from the configuration and the catalogue (a call of
// a name not in the catalogue is counted under tool "", a prompt get under
// its catalogue name, a resource read under tool "": URIs are unbounded),
// outcomes are the host's Outcome constants.
//
// Metrics:
//
//	mcp_invocations_total{backend,tool,profile,outcome}   counter: calls, prompt gets and resource reads
//	mcp_invocation_latency_ms{backend,tool,profile}       histogram: their latency, milliseconds
//	mcp_errors_total{backend,tool,outcome}                counter: the ones whose outcome is not ok or tool_error
//	mcp_retries_total{backend,tool}                       counter: resends after failures
//	mcp_circuit_state{backend,tool}                       gauge: 0 closed, 1 half-open, 2 open (tool "" is the backend's breaker)
//	mcp_backend_state{backend,state}                      gauge: 1 for the backend's current state, else 0
//	mcp_backend_restarts{backend}                         gauge: restarts since start
//	mcp_backend_tools{backend}                            gauge: tools in the catalogue
//	mcp_http_connections                                  gauge: HTTP connections open (Serve)
//	mcp_http_connections_refused_total{limit}             counter: closed at once over max_connections or max_connections_per_peer
//	mcp_gateway_sessions_dropped_total{reason}            counter: sessions closed for not keeping up (queue_full, write_timeout)
type Metrics struct {
	reg         *prometheus.Registry
	invocations *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	errors      *prometheus.CounterVec
	retries     *prometheus.CounterVec
	circuit     *prometheus.GaugeVec
	conns       connMetrics
	dropped     *prometheus.CounterVec // sessions dropped (notify.go)

	mu sync.Mutex
	h  *host.Host // for the backend gauges, read at scrape time

	ring  *auditRing // the last records, for the dashboard (auditring.go)
	stats *Stats     // per-tool counts for the REST API (api_stats.go)
}

// Stats returns the per-tool counts the REST API serves (GET
// /api/v1/mcp/metrics), fed by Record and Observe.
func (m *Metrics) Stats() *Stats { return m.stats }

// NewMetrics returns an empty registry with the metrics above and Go's
// process and runtime collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		ring: newAuditRing(), stats: NewStats(),
		reg: prometheus.NewRegistry(),
		invocations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcp_invocations_total", Help: "Tool calls, prompt gets and resource reads, by backend, tool, profile and outcome.",
		}, []string{"backend", "tool", "profile", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mcp_invocation_latency_ms", Help: "Latency of invocations in milliseconds, by backend, tool and profile.",
			Buckets: []float64{0.1, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000},
		}, []string{"backend", "tool", "profile"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcp_errors_total", Help: "Invocations that could not be made or were refused, by backend, tool and outcome.",
		}, []string{"backend", "tool", "outcome"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcp_retries_total", Help: "Calls sent again after a failure, by backend and tool.",
		}, []string{"backend", "tool"}),
		circuit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mcp_circuit_state", Help: "Circuit breaker state: 0 closed, 1 half-open, 2 open (tool \"\": the backend's breaker).",
		}, []string{"backend", "tool"}),
	}
	m.conns = newConnMetrics(m.reg)
	m.dropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_gateway_sessions_dropped_total", Help: "Gateway sessions closed because their client did not keep up: a full notification queue or a timed-out write.",
	}, []string{"reason"})
	m.reg.MustRegister(m.dropped)
	m.reg.MustRegister(m.invocations, m.latency, m.errors, m.retries, m.circuit,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), backendCollector{m})
	return m
}

// Record counts one audit record, and keeps it in the gateway's ring of
// the last AuditRingSize records (GET /api/v1/audit, the dashboard, the
// "audit" events of GET /api/v1/events). It is safe for concurrent use
// and is meant to be (part of) host.Options.Audit, where Relay puts it.
// An operator's action (Op "admin/...") is kept in the ring but is not an
// invocation: it is not counted.
func (m *Metrics) Record(r host.AuditRecord) {
	m.ring.add(r)
	if strings.HasPrefix(r.Op, "admin/") {
		return
	}
	m.stats.Record(r)
	tool := r.Tool
	if r.Outcome == host.OutcomeUnknownTool {
		tool = "" // a name a client made up: not a label value
	}
	if r.Op == "prompts/get" {
		tool = r.Prompt
	} else if r.Op == "resources/read" {
		tool = "" // URIs are unbounded
	}
	m.invocations.WithLabelValues(r.Backend, tool, r.Profile, r.Outcome).Inc()
	m.latency.WithLabelValues(r.Backend, tool, r.Profile).Observe(r.LatencyMS)
	if r.Outcome != host.OutcomeOK && r.Outcome != host.OutcomeToolError {
		m.errors.WithLabelValues(r.Backend, tool, r.Outcome).Inc()
	}
	if r.Retries > 0 {
		m.retries.WithLabelValues(r.Backend, tool).Add(float64(r.Retries))
	}
}

// Observe follows one host event (circuit breaker changes).
func (m *Metrics) Observe(ev host.Event) {
	m.stats.Observe(ev)
	if ev.Kind != host.EventCircuit {
		return
	}
	v := map[string]float64{"closed": 0, "half-open": 1, "open": 2}[ev.Circuit]
	m.circuit.WithLabelValues(ev.Backend, ev.Tool).Set(v)
}

// Attach makes the backend gauges read h's Status at every scrape, and
// follows h's events until the returned function is called.
func (m *Metrics) Attach(h *host.Host) (detach func()) {
	m.mu.Lock()
	m.h = h
	m.mu.Unlock()
	return h.Subscribe(m.Observe)
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// backendCollector reports the backend gauges from Host.Status.
type backendCollector struct{ m *Metrics }

var (
	stateDesc    = prometheus.NewDesc("mcp_backend_state", "1 for the backend's current state, else 0.", []string{"backend", "state"}, nil)
	restartsDesc = prometheus.NewDesc("mcp_backend_restarts", "Restarts of the backend since the host started.", []string{"backend"}, nil)
	toolsDesc    = prometheus.NewDesc("mcp_backend_tools", "Tools the backend has in the catalogue.", []string{"backend"}, nil)
	// The rate layer's counters (host.RateStats), read at every scrape.
	rateRefusedDesc   = prometheus.NewDesc("mcp_rate_limited_total", "Calls refused by a rate limit since the host started.", nil, nil)
	rateFallbacksDesc = prometheus.NewDesc("mcp_rate_store_fallbacks_total", "Calls decided by this replica's own rate buckets because the shared store did not answer in time.", nil, nil)
	rateDownDesc      = prometheus.NewDesc("mcp_rate_store_down", "1 while the last access to the shared store's rate buckets failed, else 0.", nil, nil)
	allStates         = []host.State{host.StateIdle, host.StateStarting, host.StateReady, host.StateRestarting, host.StateFailed, host.StateNeedsLogin, host.StateDisabled, host.StateClosed}
)

func (c backendCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- stateDesc
	ch <- restartsDesc
	ch <- toolsDesc
	ch <- rateRefusedDesc
	ch <- rateFallbacksDesc
	ch <- rateDownDesc
}

func (c backendCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	h := c.m.h
	c.m.mu.Unlock()
	if h == nil {
		return
	}
	for _, st := range h.Status() {
		for _, s := range allStates {
			v := 0.0
			if st.State == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, v, st.Name, string(s))
		}
		ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.GaugeValue, float64(st.Restarts), st.Name)
		ch <- prometheus.MustNewConstMetric(toolsDesc, prometheus.GaugeValue, float64(st.Tools), st.Name)
	}
	rs := h.RateStats()
	down := 0.0
	if rs.StoreDown {
		down = 1
	}
	ch <- prometheus.MustNewConstMetric(rateRefusedDesc, prometheus.CounterValue, float64(rs.Refused))
	ch <- prometheus.MustNewConstMetric(rateFallbacksDesc, prometheus.CounterValue, float64(rs.StoreFallbacks))
	ch <- prometheus.MustNewConstMetric(rateDownDesc, prometheus.GaugeValue, down)
}

// sessionDropped counts one session dropped for reason (notify.go).
func (m *Metrics) sessionDropped(reason string) { m.dropped.WithLabelValues(reason).Inc() }
