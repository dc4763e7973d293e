//go:build unix

package sandbox

import (
	"context"
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// withReservedMemory makes modules instantiated with ctx back each linear
// memory with one anonymous mapping of its maximum size, reserved (not
// committed) up front: growing it never copies and never leaves an old
// buffer for the garbage collector, so an instance's resident memory is the
// pages its guest touched, at most its cap. (wazero's default grows a Go
// slice by append: while a hog grows towards its cap the old buffers stay
// until the next GC, and the host's peak was measured at about 4× the cap.)
// The mapping is outside the Go heap, so it does not distort GC pacing; it
// is unmapped when the module is closed. Where mmap fails the default
// allocation is used.
func withReservedMemory(ctx context.Context) context.Context {
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(func(c, max uint64) experimental.LinearMemory {
		if max == 0 || max > 1<<32 {
			return &sliceMemory{}
		}
		b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
		if err != nil {
			return &sliceMemory{}
		}
		return &mappedMemory{buf: b}
	}))
}

// mappedMemory is a linear memory in a fixed anonymous mapping.
type mappedMemory struct{ buf []byte }

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if m.buf == nil || size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size:size]
}

func (m *mappedMemory) Free() {
	if m.buf != nil {
		_ = syscall.Munmap(m.buf)
		m.buf = nil
	}
}

// newLinearBuffer returns a buffer of at most max bytes for the Go
// kernel's memory: one reserved mapping (as withReservedMemory), or, where
// the mapping fails, a Go slice.
func newLinearBuffer(max uint64) linearBuffer {
	if max == 0 || max > 1<<32 {
		return &sliceMemory{}
	}
	b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return &sliceMemory{}
	}
	return &mappedMemory{buf: b}
}
