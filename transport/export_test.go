package transport

// SetNoTaskLayer leaves the task layers (tasks.go, tasks_http.go) out of the
// transports built from now on, for benchmarks that measure their cost.
func SetNoTaskLayer(off bool) { noTaskLayer = off }
