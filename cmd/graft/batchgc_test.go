package main

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBatchGC: a plan runs with the collector off under batchMemoryLimit,
// or under the limit GOMEMLIMIT set, and both are put back after.
func TestBatchGC(t *testing.T) {
	oldPercent, oldLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	defer func() { debug.SetGCPercent(oldPercent); debug.SetMemoryLimit(oldLimit) }()

	restore := batchGC()
	require.Equal(t, -1, debug.SetGCPercent(-1))
	require.Equal(t, int64(batchMemoryLimit), debug.SetMemoryLimit(-1))
	restore()
	require.Equal(t, 100, debug.SetGCPercent(100))
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))

	debug.SetMemoryLimit(64 << 20) // as GOMEMLIMIT=64MiB would
	restore = batchGC()
	require.Equal(t, int64(64<<20), debug.SetMemoryLimit(-1))
	restore()
	require.Equal(t, int64(64<<20), debug.SetMemoryLimit(-1))
	require.Equal(t, 100, debug.SetGCPercent(100))
}
