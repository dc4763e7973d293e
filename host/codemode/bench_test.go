package codemode_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/toolhost/toolhost/config"
)

// BenchmarkRun is a warm run in the Runner alone (no MCP, no pipeline: the
// caller is a fake answering at once): the sandbox call and the guest's
// work (a fresh goja runtime, compile, run, JSON).
func BenchmarkRun(b *testing.B) {
	r := newRunnerTB(b, config.CodeMode{Instances: 1})
	f := &fakeCaller{}
	for _, v := range []struct{ name, code string }{
		{"code=trivial", "return 1"},
		{"code=1-call", `return (await tools.fx__echo({text: "hello"})).content[0].text`},
		{"code=loop-10k", `let s = 0; for (let i = 0; i < 10000; i++) s += i; return s`},
		{"code=loop-10k-var", `var s = 0; for (var i = 0; i < 10000; i++) s += i; return s`},
	} {
		b.Run(v.name, func(b *testing.B) {
			ctx := context.Background()
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				res, err := r.Run(ctx, f, nil, v.code)
				lat = append(lat, time.Since(t0))
				if err != nil || res.IsError {
					b.Fatal(err, text(res))
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		})
	}
}
