package gateway

// FastServed is the number of tools/call requests the stdio fast path has
// served in this process (fast.go).
func FastServed() int64 { return fastServed.Load() }
