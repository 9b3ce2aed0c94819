package linearmem

import (
	"math"

	"golang.org/x/sys/unix"

	"github.com/tetratelabs/wazero/experimental"
)

var allocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(allocate)

// allocate reserves max bytes of address space, inaccessible and without
// swap reserved, for a memory that grows up to max; nothing of it is
// resident until the module touches it. Failing (an address space limit),
// the memory is a Go slice instead.
func allocate(_, max uint64) experimental.LinearMemory {
	if max == 0 || max > math.MaxInt {
		return &inHeap{}
	}
	b, err := unix.Mmap(-1, 0, int(max), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return &inHeap{}
	}
	return &reserved{buf: b}
}

// reserved is a linear memory in a reservation, buf, of which the first
// rw bytes are usable.
type reserved struct {
	buf []byte
	rw  int
}

// Reallocate makes the memory size bytes long, in place: its address never
// changes, so it also backs shared memories. nil, which wazero reports as
// a failed growth, when size is beyond the reservation or the system
// refuses the memory.
func (m *reserved) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		return nil
	}
	if n := int(size); n > m.rw {
		if err := unix.Mprotect(m.buf[m.rw:n], unix.PROT_READ|unix.PROT_WRITE); err != nil {
			return nil
		}
		mapped.Add(int64(n - m.rw))
		m.rw = n
	}
	return m.buf[:size:size]
}

// Free unmaps the reservation; see Allocator for when wazero calls it.
func (m *reserved) Free() {
	if m.buf == nil {
		return
	}
	mapped.Add(-int64(m.rw))
	unix.Munmap(m.buf)
	m.buf, m.rw = nil, 0
}
