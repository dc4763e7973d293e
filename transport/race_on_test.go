//go:build race

package transport_test

// raceOn: the race detector is on; sync.Pool drops what is put in it at
// random, so allocation bounds are not checked.
const raceOn = true
