package gateway_test

import (
	"strings"
	"testing"
)

// TestElicitationAndSamplingRelayed: an upstream server's elicitation and
// sampling during a call go to the gateway client that made the call (here
// the TypeScript SDK's, over HTTP, protocol 2025-11-25); a client that did
// not declare the capability gets the server a clear refusal.
func TestElicitationAndSamplingRelayed(t *testing.T) {
	f := start(t, `
[servers.ask]
command = "@FIXTURE@"
args    = ["-client", "-protocol", "2025-11-25"]
startup_timeout = "5m"
`)
	url := serveLoopback(t, f)

	r := runTSClient(t, []string{"CALL=ask__elicit", `ELICIT={"name":"Ada"}`}, "http", url)
	if got := resultText(r); r.Result.IsError || got != `action=accept content={"name":"Ada"}` {
		t.Errorf("elicit through the gateway: %+v", r.Result)
	}
	r = runTSClient(t, []string{"CALL=ask__sample", `ARGS={"prompt":"hi"}`, "SAMPLE=sampled"}, "http", url)
	if got := resultText(r); r.Result.IsError || got != "model=tsclient-model text=sampled" {
		t.Errorf("sample through the gateway: %+v", r.Result)
	}
	r = runTSClient(t, []string{"CALL=ask__elicit"}, "http", url)
	if got := resultText(r); !r.Result.IsError || !strings.Contains(got, "did not declare the elicitation capability") {
		t.Errorf("elicit by a client without the capability: %+v", r.Result)
	}

	var ops []string
	for _, rec := range f.records() {
		if rec.Op != "" {
			ops = append(ops, rec.Op+":"+rec.Outcome+":"+rec.Client)
		}
	}
	want := []string{"elicitation/create:accept:http", "sampling/createMessage:ok:http", "elicitation/create:error:http"}
	if strings.Join(ops, " ") != strings.Join(want, " ") {
		t.Errorf("audited requests %v; want %v", ops, want)
	}
}

func resultText(r tsResult) string {
	var b strings.Builder
	for _, c := range r.Result.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}
