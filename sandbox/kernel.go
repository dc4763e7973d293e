package sandbox

import (
	"encoding/binary"
	"sort"
)

// kernel is an instance's Extism kernel, in Go: the memory the guest's
// kernel pointers (i64 offsets) address, its blocks, and the call's input,
// output and error. It replaces the go-sdk's kernel Wasm module
// (extism-runtime.wasm), whose every operation was a Go→Wasm entry, with the
// same wire behaviour (docs/PLUGIN-ABI.md §2):
//
//   - alloc(n) returns a new block of n bytes at a non-zero offset, 8-byte
//     aligned; every block, even an empty one, has its own offset;
//   - length(ptr) is the block's size, 0 when ptr is not a live block;
//   - free(ptr) frees a live block (anything else is ignored); freeing the
//     newest blocks gives their space back at once, so a guest that
//     allocates and frees in a loop does not grow the memory;
//   - reset (before every call) frees every block.
//
// Its memory grows on demand (doubling, from 64 KiB) up to max bytes, the
// plugin's memory cap, and at most maxBlocks blocks are live at once: an
// alloc beyond either returns 0 (the host's own allocations then fail the
// call with ErrMemoryLimit). Where mmap exists the memory is one
// reserved-not-committed mapping of max bytes (see withReservedMemory), so
// growing never copies; it is released by free.
//
// A kernel is used by one call at a time (its instance's).
type kernel struct {
	buf    linearBuffer
	mem    []byte // the memory in use: mem[:len] is addressable
	max    uint64
	top    uint64 // first free offset
	blocks []kblock

	input, inputLen uint64
	out, outLen     uint64
	errPtr          uint64
}

// kblock is a block: offset and size (the memory is at most 4 GiB), n ==
// freed once freed.
type kblock struct{ off, n uint32 }

const freed = ^uint32(0)

// linearBuffer is a growable memory (experimental.LinearMemory's shape).
type linearBuffer interface {
	Reallocate(size uint64) []byte
	Free()
}

const (
	// kernelBase is the first block offset: 0 means "no block".
	kernelBase = 8
	// kernelMinSize is the initial kernel memory: 64 KiB.
	kernelMinSize = 64 << 10
	// maxBlocks bounds the blocks of one call (their table costs 8 bytes
	// each: at most 2 MiB per instance).
	maxBlocks = 1 << 18
)

// newKernel returns a kernel whose memory is capped at max bytes (at most
// 4 GiB).
func newKernel(max uint64) *kernel {
	max = min(max, 1<<32)
	k := &kernel{max: max, top: kernelBase}
	k.buf = newLinearBuffer(max)
	k.mem = k.buf.Reallocate(min(kernelMinSize, max))
	if k.mem == nil {
		k.buf = &sliceMemory{}
		k.mem = k.buf.Reallocate(min(kernelMinSize, max))
	}
	return k
}

// free releases the kernel's memory.
func (k *kernel) release() {
	if k.buf != nil {
		k.buf.Free()
		k.buf, k.mem = nil, nil
	}
}

// reset frees every block (before each call).
func (k *kernel) reset() {
	k.blocks = k.blocks[:0]
	k.top = kernelBase
	k.input, k.inputLen, k.out, k.outLen, k.errPtr = 0, 0, 0, 0, 0
}

// alloc returns a new block of n bytes, or 0 when the memory cap or the
// block count is reached.
func (k *kernel) alloc(n uint64) uint64 {
	if n > k.max || len(k.blocks) >= maxBlocks {
		return 0
	}
	off := k.top
	end := off + max((n+7)&^7, 8)
	if end > k.max {
		return 0
	}
	if end > uint64(len(k.mem)) && !k.grow(end) {
		return 0
	}
	k.top = end
	k.blocks = append(k.blocks, kblock{off: uint32(off), n: uint32(n)})
	return off
}

func (k *kernel) grow(need uint64) bool {
	size := uint64(len(k.mem))
	for size < need {
		size *= 2
	}
	size = min(size, k.max)
	m := k.buf.Reallocate(size)
	if m == nil {
		return false
	}
	k.mem = m
	return true
}

// find returns the index of the live block at off, or -1.
func (k *kernel) find(off uint64) int {
	if off > 1<<32 {
		return -1
	}
	i := sort.Search(len(k.blocks), func(i int) bool { return uint64(k.blocks[i].off) >= off })
	if i < len(k.blocks) && uint64(k.blocks[i].off) == off && k.blocks[i].n != freed {
		return i
	}
	return -1
}

// length is the size of the live block at off, 0 if there is none.
func (k *kernel) length(off uint64) uint64 {
	if i := k.find(off); i >= 0 {
		return uint64(k.blocks[i].n)
	}
	return 0
}

func (k *kernel) free(off uint64) {
	i := k.find(off)
	if i < 0 {
		return
	}
	k.blocks[i].n = freed
	for n := len(k.blocks); n > 0 && k.blocks[n-1].n == freed; n-- {
		k.top = uint64(k.blocks[n-1].off)
		k.blocks = k.blocks[:n-1]
	}
}

// bytes returns a view of n bytes at off, or false when out of range.
func (k *kernel) bytes(off, n uint64) ([]byte, bool) {
	if off > uint64(len(k.mem)) || n > uint64(len(k.mem))-off {
		return nil, false
	}
	return k.mem[off : off+n : off+n], true
}

func (k *kernel) loadU8(off uint64) (uint64, bool) {
	if off >= uint64(len(k.mem)) {
		return 0, false
	}
	return uint64(k.mem[off]), true
}

func (k *kernel) loadU64(off uint64) (uint64, bool) {
	if off > uint64(len(k.mem)) || uint64(len(k.mem))-off < 8 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(k.mem[off:]), true
}

func (k *kernel) storeU8(off uint64, v byte) bool {
	if off >= uint64(len(k.mem)) {
		return false
	}
	k.mem[off] = v
	return true
}

func (k *kernel) storeU64(off, v uint64) bool {
	if off > uint64(len(k.mem)) || uint64(len(k.mem))-off < 8 {
		return false
	}
	binary.LittleEndian.PutUint64(k.mem[off:], v)
	return true
}

// setInput resets the kernel and copies b into a new block as the call's
// input. It fails only when b does not fit under the cap.
func (k *kernel) setInput(b []byte) bool {
	k.reset()
	off := k.alloc(uint64(len(b)))
	if off == 0 {
		return false
	}
	copy(k.mem[off:], b)
	k.input, k.inputLen = off, uint64(len(b))
	return true
}

// sliceMemory is wazero's default linear memory, for when a mapping cannot
// be made: a Go slice grown by copying.
type sliceMemory struct{ buf []byte }

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if size > uint64(cap(m.buf)) {
		nb := make([]byte, size)
		copy(nb, m.buf)
		m.buf = nb
	}
	m.buf = m.buf[:size]
	return m.buf
}

func (m *sliceMemory) Free() { m.buf = nil }
