package sandbox

import (
	"testing"

	"github.com/toolhost/toolhost/transport"
	"github.com/toolhost/toolhost/transport/transporttest"
)

// TestConformance runs the suite every transport.Transport passes against a
// plugin, as it runs against the stdio and HTTP MCP transports.
func TestConformance(t *testing.T) {
	e := newTestEngine(t)
	transporttest.Run(t, transporttest.Backend{
		New: func(t *testing.T) transport.Transport {
			return e.Plugin(&Manifest{Name: "echo", Path: fixture(t, "echo"), Instances: 4}, nil)
		},
		Echo:     "echo",
		Slow:     "sleep",
		SlowArgs: map[string]any{"text": "10s"},
	})
}
