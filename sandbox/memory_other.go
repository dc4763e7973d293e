//go:build !unix

package sandbox

import "context"

// withReservedMemory is a no-op where there is no mmap: wazero's default
// allocation (a Go slice grown by append) is used.
func withReservedMemory(ctx context.Context) context.Context { return ctx }

// newLinearBuffer returns a Go slice buffer for the Go kernel's memory.
func newLinearBuffer(max uint64) linearBuffer { return &sliceMemory{} }
