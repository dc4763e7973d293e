package testutil

import "runtime"

// BytesPerCall returns the bytes f allocates per call: f is called once
// to warm up, then the lowest of 3 rounds of n calls each (a collection
// between rounds), so that another goroutine's allocation in one round
// does not count.
func BytesPerCall(n int, f func()) uint64 {
	f()
	best := ^uint64(0)
	for range 3 {
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		for range n {
			f()
		}
		runtime.ReadMemStats(&b)
		best = min(best, (b.TotalAlloc-a.TotalAlloc)/uint64(n))
	}
	return best
}
