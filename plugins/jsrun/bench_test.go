//go:build !wasip1

package main

import (
	"testing"

	"github.com/dop251/goja"
	"github.com/toolhost/toolhost/pdk/pdktest"
)

// BenchmarkRunCode is a trivial run on the host (no Wasm): the engine's own
// cost per run (a fresh runtime, the prelude, compile, run), and its parts.
func BenchmarkRunCode(b *testing.B) {
	pdktest.Reset()
	b.Run("part=run_code", func(b *testing.B) {
		for b.Loop() {
			if out, err := pdktest.CallTool("run_code", map[string]any{"code": "return 1"}); err != nil || out.IsError {
				b.Fatal(err, out)
			}
		}
	})
	b.Run("part=goja.New", func(b *testing.B) {
		for b.Loop() {
			_ = goja.New()
		}
	})
	b.Run("part=newRun", func(b *testing.B) {
		for b.Loop() {
			_ = newRun(limits{50, 1 << 10, 100}, false)
		}
	})
}
