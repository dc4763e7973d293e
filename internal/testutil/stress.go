package testutil

import (
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ReservoirSize is how many latencies a Reservoir keeps.
const ReservoirSize = 4096

// Reservoir keeps a uniform random sample of one caller's latencies in
// fixed memory (Vitter's algorithm R) and the exact maximum, so that a load
// test recording half a million calls does not grow the heap it measures.
// It is not safe for concurrent use: one per caller.
type Reservoir struct {
	rng    *rand.Rand
	n      uint64
	Sample []time.Duration // at most ReservoirSize latencies
	Max    time.Duration   // the longest latency added
}

// NewReservoir returns an empty Reservoir whose sampling is seeded by seed.
func NewReservoir(seed uint64) *Reservoir {
	return &Reservoir{rng: rand.New(rand.NewPCG(seed, 2)), Sample: make([]time.Duration, 0, ReservoirSize)}
}

// Reset empties r, keeping its memory.
func (r *Reservoir) Reset() { r.n, r.Sample, r.Max = 0, r.Sample[:0], 0 }

// Add records one latency.
func (r *Reservoir) Add(d time.Duration) {
	r.n++
	r.Max = max(r.Max, d)
	if len(r.Sample) < ReservoirSize {
		r.Sample = append(r.Sample, d)
	} else if j := r.rng.Uint64N(r.n); j < ReservoirSize {
		r.Sample[j] = d
	}
}

// SettledRSS returns the process's resident set size in bytes after a
// garbage collection has returned what it can to the OS. It skips tb where
// /proc/self/status cannot be read.
func SettledRSS(tb testing.TB) int64 {
	tb.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Skip("no /proc/self/status")
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS")
	return 0
}
