//go:build race

package gateway_test

// raceEnabled: the race detector's shadow memory grows with the goroutines
// and accesses it has seen, so resident-memory targets are checked without it.
const raceEnabled = true
