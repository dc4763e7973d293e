package transport

// SetNoTaskLayer leaves the task layers (tasks.go, tasks_http.go) out of the
// transports built from now on, for benchmarks that measure their cost.
func SetNoTaskLayer(off bool) { noTaskLayer = off }

// PendingSizes counts the tools/call request IDs s still holds for
// CallToolSized (stdio_size.go): 0 once every call has returned.
func PendingSizes(s *Stdio) int { return s.sizes.waiting() }
