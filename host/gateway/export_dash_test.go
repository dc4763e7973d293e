package gateway

import "time"

// SetHeartbeat sets the interval of the event streams' heartbeat comment
// for a test (before it serves), and returns a function that restores it.
func SetHeartbeat(d time.Duration) (restore func()) {
	old := heartbeat
	heartbeat = d
	return func() { heartbeat = old }
}
