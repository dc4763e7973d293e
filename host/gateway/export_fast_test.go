package gateway

import "time"

// FastServed is the number of tools/call requests the stdio fast path has
// served in this process (fast.go).
func FastServed() int64 { return fastServed.Load() }

// MultiRoundDetached is the number of tools/call requests of 2026-07-28
// clients multiRound has run on a goroutine of their own (mrtr.go).
func MultiRoundDetached() int64 { return mrtrDetached.Load() }

// ClientInFlight is the number of requests of client the guard counts
// against its max_concurrent now (guard.go).
func ClientInFlight(g *Gateway, client string) int {
	g.guard.mu.Lock()
	defer g.guard.mu.Unlock()
	if u := g.guard.clients[client]; u != nil {
		return u.inflight
	}
	return 0
}

// FastHTTPServed is the number of tools/call requests the Streamable HTTP
// fast path has served.
func FastHTTPServed() int64 { return fastHTTPServed.Load() }

// DelayBind makes every ServeTransport wait d between the go-sdk's Connect
// and the fast path's bind until restore is called (after the
// connections end).
func DelayBind(d time.Duration) (restore func()) {
	hook := func() { time.Sleep(d) }
	testHookBeforeBind.Store(&hook)
	return func() { testHookBeforeBind.Store(nil) }
}
