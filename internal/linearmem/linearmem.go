// Package linearmem backs the linear memory of WebAssembly instances with
// memory mapped outside the Go heap, where the platform allows: the
// instance's maximum is reserved (address space only) and each growth
// makes the next part of it usable in place. wazero's own linear memory is
// a Go slice grown by append, which copies the whole memory at each growth
// and keeps capacity beyond it, zeroed and so resident; with a Go program
// in the instance, whose runtime grows its memory many times as it starts,
// that is about 1 MiB more per instance (4.4 MiB rather than 3.4) and 15%
// more CPU time to start it (bench/README.md, "Workers").
package linearmem

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// Allocator returns the allocator to give wazero for an instance's memory
// (experimental.WithMemoryAllocator), or nil where memory is not mapped
// here, which leaves wazero's own.
//
// The memory it hands out is unmapped when wazero frees it, as the
// instance's module closes its resources: on the instance's own goroutine
// once it has returned from the module, or by an explicit close of the
// module or its runtime. Nothing may close an instance from elsewhere
// while one of its host calls may still touch its memory.
func Allocator() experimental.MemoryAllocator { return allocator }

// mapped is the bytes of linear memory currently usable (read-write), over
// all instances, as a measure of what workers hold outside the Go heap.
var mapped atomic.Int64

// Mapped returns the bytes of linear memory mapped read-write by the
// allocator and not yet freed.
func Mapped() int64 { return mapped.Load() }

// inHeap is a linear memory in a Go slice, grown as wazero grows its own:
// what an instance gets when its maximum cannot be reserved.
type inHeap struct{ buf []byte }

func (m *inHeap) Reallocate(size uint64) []byte {
	if n := int(size) - len(m.buf); n > 0 {
		m.buf = append(m.buf, make([]byte, n)...)
	}
	return m.buf[:size]
}

func (m *inHeap) Free() { m.buf = nil }
