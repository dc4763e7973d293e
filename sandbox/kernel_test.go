package sandbox

import (
	"context"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestKernel checks the Go kernel's block semantics (docs/PLUGIN-ABI.md §2).
func TestKernel(t *testing.T) {
	k := newKernel(1 << 20)
	defer k.release()
	if !k.setInput([]byte("hello")) || k.length(k.input) != 5 || k.inputLen != 5 {
		t.Fatalf("input block: off %d len %d", k.input, k.length(k.input))
	}
	a, b := k.alloc(0), k.alloc(0)
	if a == 0 || b == 0 || a == b || k.length(a) != 0 {
		t.Fatalf("empty blocks must have distinct non-zero offsets: %d %d", a, b)
	}
	c := k.alloc(100)
	if c%8 != 0 || k.length(c) != 100 || k.length(c+8) != 0 || k.length(0) != 0 {
		t.Fatalf("block %d: length %d", c, k.length(c))
	}
	top := k.top
	k.free(b) // not the newest: space kept
	if k.top != top || k.length(b) != 0 {
		t.Fatalf("free of an inner block: top %d → %d", top, k.top)
	}
	k.free(c) // the newest, and b behind it: both given back
	if k.top != b {
		t.Fatalf("after freeing the newest blocks top is %d, want %d", k.top, b)
	}
	k.free(c) // double free and a non-block: ignored
	k.free(12345)
	for range 1000 { // alloc/free in a loop does not grow the memory
		k.free(k.alloc(4096))
	}
	if len(k.mem) > 64<<10 {
		t.Fatalf("memory grew to %d bytes", len(k.mem))
	}
	if k.alloc(1<<20) != 0 || k.alloc(1<<63) != 0 {
		t.Fatal("an alloc over the cap must return 0")
	}
	big := k.alloc(900 << 10) // grows the memory within the cap
	if big == 0 || uint64(len(k.mem)) < big+900<<10 || !k.storeU64(big+900<<10-8, 7) {
		t.Fatalf("growth: block %d, memory %d", big, len(k.mem))
	}
	if _, ok := k.loadU64(uint64(len(k.mem)) - 7); ok {
		t.Fatal("a load past the memory must fail")
	}
	if _, ok := k.bytes(^uint64(0)-3, 8); ok {
		t.Fatal("an overflowing range must fail")
	}
	k.reset()
	if k.top != kernelBase || k.length(c) != 0 || k.length(big) != 0 {
		t.Fatal("reset must free every block")
	}

	k = newKernel(4 << 20) // room for maxBlocks empty blocks
	defer k.release()
	for i := range maxBlocks {
		if k.alloc(0) == 0 {
			t.Fatalf("alloc %d failed", i)
		}
	}
	if k.alloc(0) != 0 {
		t.Fatalf("alloc number %d must fail", maxBlocks+1)
	}
}

// TestCallCost checks what one warm call costs the host: at most 8 KiB
// allocated and one goroutine started (wazero's close-on-context-done
// watcher of the one Go→Wasm entry), for the raw-ABI and the pdk echo.
func TestCallCost(t *testing.T) {
	e := newTestEngine(t)
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	for _, name := range []string{"echo", "pdkecho"} {
		t.Run(name, func(t *testing.T) {
			p := connect(t, e, name, Manifest{Instances: 1}, nil)
			ctx := context.Background()
			call := func() {
				res, err := p.CallTool(ctx, params)
				if err != nil || resultText(res) != "hello" {
					t.Fatal(err, resultText(res))
				}
			}
			for range 20 {
				call()
			}
			const n = 200
			created := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			metrics.Read(created)
			g0 := created[0].Value.Uint64()
			for range n {
				call()
			}
			metrics.Read(created)
			runtime.ReadMemStats(&m1)
			perCall := (m1.TotalAlloc - m0.TotalAlloc) / n
			goroutines := float64(created[0].Value.Uint64()-g0) / n
			t.Logf("%s: %d bytes and %.2f goroutines per call", name, perCall, goroutines)
			if perCall > 8<<10 {
				t.Errorf("%d bytes allocated per call, want at most 8 KiB", perCall)
			}
			if goroutines > 1.5 {
				t.Errorf("%.2f goroutines started per call, want 1 (one Go→Wasm entry)", goroutines)
			}
		})
	}
}
