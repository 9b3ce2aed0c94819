package elect

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStaleLockIsRemoved(t *testing.T) {
	c := newCluster(t)
	// Left by a contender that crashed inside the lock. Its mtime is set on
	// the real clock because the directory's clock is the real one here.
	require.NoError(t, os.WriteFile(c.lockPath(), []byte("S009\n"), 0o644))
	old := time.Now().Add(-DefaultLockStale - time.Minute)
	require.NoError(t, os.Chtimes(c.lockPath(), old, old))

	e := c.host("S001")
	res := campaign(context.Background(), e)
	c.clk.waitTimers(t, 1) // backing off after clearing it
	assert.NoFileExists(t, c.lockPath())
	c.clk.Advance(e.backoff)
	r := recv(t, res)
	require.NoError(t, r.err)
	assert.Equal(t, int64(1), r.term.Epoch())
	assert.NoFileExists(t, c.lockPath())
	probes, err := filepath.Glob(filepath.Join(c.dir, "*.probe.*"))
	require.NoError(t, err)
	assert.Empty(t, probes, "the probe file is removed")
}

func TestFreshLockBlocks(t *testing.T) {
	c := newCluster(t)
	require.NoError(t, os.WriteFile(c.lockPath(), []byte("S009\n"), 0o644))
	e := c.host("S001")
	res := campaign(context.Background(), e)
	// A minute on this host's clock: the lock's age is read on the
	// directory's clock, where only milliseconds pass.
	for range 120 {
		c.clk.step(t, 1, 500*time.Millisecond)
	}
	c.clk.waitTimers(t, 1)
	assert.FileExists(t, c.lockPath())
	assert.NoFileExists(t, filepath.Join(c.dir, instance+".lease.json"), "no one took the lease")
	assert.True(t, pending(res))

	require.NoError(t, os.Remove(c.lockPath()))
	r := c.until(1, 100*time.Millisecond, res)
	require.NoError(t, r.err)
	assert.Equal(t, int64(1), r.term.Epoch())
}

func TestHerdBackoff(t *testing.T) {
	// 0.2 s + (FNV-32a(id) mod 8) × 0.1 s; the hashes were worked out apart
	// from this code (S001 hashes to 0x1632ed99).
	for id, want := range map[string]time.Duration{
		"S001":   300 * time.Millisecond,
		"S002":   200 * time.Millisecond,
		"S003":   500 * time.Millisecond,
		"S004":   400 * time.Millisecond,
		"S005":   700 * time.Millisecond,
		"host-a": 700 * time.Millisecond,
	} {
		assert.Equal(t, want, herdBackoff(id), id)
	}
}
