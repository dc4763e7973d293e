//go:build race

package sandbox

// raceEnabled: the race detector slows guests and host functions many times
// over and adds shadow memory, so the resident-memory measurements
// (TestMemoryBoundHolds, TestHostileMix) run without it (go test ./sandbox/).
const raceEnabled = true
