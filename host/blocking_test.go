//go:build linux

package host

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
)

// TestBlockingFileHoldsNoLock: an apply whose spec names a file that
// would block on read (a FIFO, procfs's kmsg) is refused at once, naming
// the entry, and the apply lock is free: the next apply, a restart and a
// down go through.
func TestBlockingFileHoldsNoLock(t *testing.T) {
	dir := t.TempDir()
	h := open(t, filepath.Join(dir, ".graft"))
	defer h.Shutdown(context.Background())
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600))
	ctx := context.Background()
	blocking := []string{"pipe"}
	if _, err := os.Stat("/proc/kmsg"); err == nil {
		blocking = append(blocking, "/proc/kmsg")
	}
	for _, f := range blocking {
		began := time.Now()
		_, err := h.Apply(ctx, ApplyRequest{Source: testsupport.Source(dir, "name: shop\nplugins:\n  db: {command: [sleep, '60'], files: ["+f+"]}\n")}, Report{})
		require.Error(t, err, f)
		assert.Contains(t, err.Error(), "plugins.db.files[0]: "+f)
		assert.Less(t, time.Since(began), 5*time.Second, "%s: refused, not waited on", f)
	}
	_, err := h.Apply(ctx, ApplyRequest{Source: testsupport.Source(dir, twoSleeps), LockWait: time.Second}, Report{})
	require.NoError(t, err, "the lock is free")
	require.NoError(t, h.Restart(ctx, ApplyRequest{Restart: []string{"db"}, LockWait: time.Second}, Report{}))
	require.NoError(t, h.Down(ctx, ApplyRequest{Holder: "test"}, Report{}))
}
