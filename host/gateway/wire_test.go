package gateway_test

import (
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/gateway"
)

// TestRelayKeepsAudit: Relay sets the three relays and makes Audit count
// in the metrics after calling the Audit already set; with no metrics it
// leaves Audit alone.
func TestRelayKeepsAudit(t *testing.T) {
	var got []string
	opts := &host.Options{Audit: func(r host.AuditRecord) { got = append(got, r.Tool) }}
	gateway.Relay(opts, gateway.NewMetrics())
	if opts.Elicit == nil || opts.Sample == nil || opts.ListRoots == nil || opts.Audit == nil {
		t.Fatalf("Relay left a hook unset: %+v", opts)
	}
	opts.Audit(host.AuditRecord{Tool: "a__b", Backend: "a", Outcome: host.OutcomeOK})
	if len(got) != 1 || got[0] != "a__b" {
		t.Errorf("the Audit set before Relay got %v", got)
	}
	bare := &host.Options{}
	gateway.Relay(bare, nil)
	if bare.Audit != nil || bare.Elicit == nil {
		t.Errorf("Relay(opts, nil): Audit %v, Elicit set %v", bare.Audit != nil, bare.Elicit != nil)
	}
}
