package host

import (
	"context"
	"testing"

	"github.com/toolhost/toolhost/config"
)

// rateLayerAlone returns the rate layer of a Host on cfg in front of a
// handler that does nothing, and an op of tool made by client.
func rateLayerAlone(tb testing.TB, cfg *config.Config) (handler, *op) {
	tb.Helper()
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	h := &Host{}
	h.cur.Store(&topology{cfg: cfg})
	next := func(context.Context, *op) (any, error) { return nil, nil }
	return rateLayer(h, next), &op{req: request{method: methodCallTool, name: "t__echo"}}
}

// TestRateLayerAllocs: without any rate configured the layer allocates
// nothing (it is one atomic load and a comparison); with a local rate a
// call that goes through allocates nothing either.
func TestRateLayerAllocs(t *testing.T) {
	ctx := WithClient(context.Background(), "bot")
	layer, o := rateLayerAlone(t, &config.Config{})
	if n := testing.AllocsPerRun(1000, func() { layer(ctx, o) }); n != 0 {
		t.Errorf("no rate: %v allocations a call", n)
	}
	layer, o = rateLayerAlone(t, &config.Config{
		Tools: map[string]*config.ToolOptions{"t__echo": {Rate: "1000000/s"}},
		Serve: config.Serve{Clients: map[string]*config.Client{"bot": {Token: "bbbbbbbbbbbbbbbbbbbb", Rate: "1000000/s"}}},
	})
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := layer(ctx, o); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a local rate: %v allocations a call", n)
	}
}

// BenchmarkRateLayer: the layer's own cost, without a rate and with a
// client's and a tool's local rate:
//
//	go test -run XXX -bench BenchmarkRateLayer -benchtime=2000x ./host/
func BenchmarkRateLayer(b *testing.B) {
	ctx := WithClient(context.Background(), "bot")
	for _, c := range []struct {
		name string
		cfg  *config.Config
	}{
		{"rate=none", &config.Config{}},
		{"rate=client+tool", &config.Config{
			Tools: map[string]*config.ToolOptions{"t__echo": {Rate: "1000000/s"}},
			Serve: config.Serve{Clients: map[string]*config.Client{"bot": {Token: "bbbbbbbbbbbbbbbbbbbb", Rate: "1000000/s"}}},
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			layer, o := rateLayerAlone(b, c.cfg)
			for b.Loop() {
				layer(ctx, o)
			}
		})
	}
}
