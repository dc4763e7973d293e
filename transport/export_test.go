package transport

// SetNoTaskLayer leaves the task layers (tasks.go, tasks_http.go) out of the
// transports built from now on, for benchmarks that measure their cost.
func SetNoTaskLayer(off bool) { noTaskLayer = off }

// PendingSizes counts the tools/call request IDs s still holds for
// CallToolSized (stdio_size.go): 0 once every call has returned.
func PendingSizes(s *Stdio) int { return s.sizes.waiting() }

// FastCalls counts the tools/call requests s made on its own path
// (stdio_fast.go), not through the go-sdk.
func FastCalls(s *Stdio) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fast == nil {
		return 0
	}
	return s.fast.next.Load()
}

// FastWaiting counts the calls made on that path still waiting.
func FastWaiting(s *Stdio) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fast == nil {
		return 0
	}
	return int(s.fast.n.Load())
}

// HTTPFastCalls counts the tools/call requests h made on its own path
// (http_fast.go).
func HTTPFastCalls(h *HTTP) uint64 { return h.fast.next.Load() }

// SetMaxFastEvent sets the bound on one SSE event of toolhost's own HTTP
// tools/call path (default mcp.DefaultMaxEventSize) and returns a func that
// restores it.
func SetMaxFastEvent(n int) func() {
	old := maxFastEvent
	maxFastEvent = n
	return func() { maxFastEvent = old }
}
