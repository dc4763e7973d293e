//go:build !race

package transport_test

const raceOn = false
