package host_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolhost/toolhost/host"
)

// TestHealthCheckEveryProtocolEra: the default health check works on a
// server of each protocol era, so a healthy server is never restarted for
// failing it: ping up to 2025-11-25, and where ping was removed (2026-07-28:
// a go-sdk v1.8 server over stateless HTTP, or over stdio) the probe that
// replaces it.
func TestHealthCheckEveryProtocolEra(t *testing.T) {
	for _, era := range []struct {
		name string
		conf func(t *testing.T) string
	}{
		{"stdio-latest", func(t *testing.T) string { return `command = "@FIXTURE@"` }},
		{"stdio-2025-06-18", func(t *testing.T) string { return `command = "@FIXTURE@"` + "\nargs = [\"-protocol\", \"2025-06-18\"]" }},
		{"http-stateful", func(t *testing.T) string { return fmt.Sprintf("url = %q", startFixtureHTTP(t)) }},
		{"http-stateless-2026-07-28", func(t *testing.T) string { return fmt.Sprintf("url = %q", startFixtureHTTP(t, "-stateless")) }},
		{"http-2025-06-18", func(t *testing.T) string {
			return fmt.Sprintf("url = %q", startFixtureHTTP(t, "-protocol", "2025-06-18"))
		}},
	} {
		t.Run(era.name, func(t *testing.T) {
			h, _ := policyHost(t, "[servers.fx]\n"+era.conf(t)+"\nhealth_interval = \"50ms\"\n", nil)
			ctx := context.Background()
			for i := range 5 {
				if err := h.CheckHealth(ctx, "fx"); err != nil {
					t.Fatalf("health check %d: %v", i+1, err)
				}
			}
			if _, err := h.CallTool(ctx, "fx__echo", map[string]any{"text": "x"}); err != nil {
				t.Fatal(err)
			}
			st := h.Status()[0]
			if st.State != host.StateReady || st.Restarts != 0 || st.Health != host.HealthOK {
				t.Fatalf("status %+v, want ready, 0 restarts, health ok", st)
			}
		})
	}
}
