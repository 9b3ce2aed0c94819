package linearmem

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const page = 64 << 10

// TestGrowsInPlace: a memory grows without moving or losing what it
// holds, zeroed where new, up to its maximum and not beyond; what it maps
// is counted while it lives, and nothing once it is freed.
func TestGrowsInPlace(t *testing.T) {
	before := Mapped()
	mem := Allocator().Allocate(page, 4*page)
	b := mem.Reallocate(page)
	require.Len(t, b, page)
	assert.Equal(t, int64(page), Mapped()-before)
	b[0], b[page-1] = 1, 2

	grown := mem.Reallocate(3 * page)
	require.Len(t, grown, 3*page)
	assert.Equal(t, unsafe.SliceData(b), unsafe.SliceData(grown), "grown in place")
	assert.Equal(t, [2]byte{1, 2}, [2]byte{grown[0], grown[page-1]}, "kept what it held")
	assert.Equal(t, make([]byte, 2*page), grown[page:], "new memory is zeroed")
	grown[3*page-1] = 3 // usable to its end
	assert.Equal(t, int64(3*page), Mapped()-before)

	assert.Len(t, mem.Reallocate(2*page), 2*page, "a smaller size is a shorter view")
	assert.Nil(t, mem.Reallocate(5*page), "no growth beyond the maximum")
	assert.Len(t, mem.Reallocate(4*page), 4*page, "up to it")
	mem.Free()
	mem.Free() // a second free is harmless
	assert.Equal(t, before, Mapped())
}

// TestUnreservable: a memory whose maximum cannot be reserved is a Go
// slice, which grows all the same.
func TestUnreservable(t *testing.T) {
	mem := allocate(0, 1<<62)
	_, ok := mem.(*inHeap)
	require.True(t, ok, "%T", mem)
	b := mem.Reallocate(page)
	b[0] = 1
	b = mem.Reallocate(2 * page)
	assert.Len(t, b, 2*page)
	assert.Equal(t, byte(1), b[0])
	mem.Free()
}
