package gateway_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/gateway"
)

// TestMetricsToolLabel: the latency histogram and the errors counter carry
// the tool label, bounded as the invocations counter's is: the catalogue
// name of a tool or prompt, "" for a name the catalogue does not hold and
// for a resource read (URIs are unbounded).
func TestMetricsToolLabel(t *testing.T) {
	m := gateway.NewMetrics()
	for _, r := range []host.AuditRecord{
		{Backend: "fx", Tool: "fx__echo", Outcome: host.OutcomeOK, LatencyMS: 1},
		{Backend: "fx", Tool: "fx__echo", Outcome: host.OutcomeTimeout, LatencyMS: 30000},
		{Backend: "fx", Tool: "fx__add", Profile: "review", Outcome: host.OutcomeDenied, LatencyMS: 0.2},
		{Tool: "made_up_<script>_" + strings.Repeat("x", 4096), Outcome: host.OutcomeUnknownTool, LatencyMS: 0.1},
		{Backend: "fx", Op: "resources/read", URI: "fixture://item/" + strings.Repeat("9", 100), Outcome: host.OutcomeBackendError, LatencyMS: 2},
		{Backend: "fx", Op: "prompts/get", Prompt: "fx__greeting", Outcome: host.OutcomeOK, LatencyMS: 3},
	} {
		m.Record(r)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	out := string(body)
	for _, want := range []string{
		`mcp_invocation_latency_ms_count{backend="fx",profile="",tool="fx__echo"} 2`,
		`mcp_invocation_latency_ms_count{backend="fx",profile="review",tool="fx__add"} 1`,
		`mcp_invocation_latency_ms_count{backend="",profile="",tool=""} 1`,
		`mcp_invocation_latency_ms_count{backend="fx",profile="",tool=""} 1`,
		`mcp_invocation_latency_ms_count{backend="fx",profile="",tool="fx__greeting"} 1`,
		`mcp_errors_total{backend="fx",outcome="timeout",tool="fx__echo"} 1`,
		`mcp_errors_total{backend="fx",outcome="denied",tool="fx__add"} 1`,
		`mcp_errors_total{backend="",outcome="unknown_tool",tool=""} 1`,
		`mcp_errors_total{backend="fx",outcome="backend_error",tool=""} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, never := range []string{"made_up", "fixture://"} {
		if strings.Contains(out, never) {
			t.Errorf("/metrics has an unbounded label value %q", never)
		}
	}
}
