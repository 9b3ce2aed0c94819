//go:build linux

package host

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/testsupport"
)

// TestHostLogRotates: a background host's own log rotates like a plugin's,
// and what the process writes to its stdout and stderr itself, a panic
// included, lands in the current file.
func TestHostLogRotates(t *testing.T) {
	dir := t.TempDir()
	c := testsupport.StartChild(t, roleEnv, "hostlog", "HOST_TEST_DIR="+dir)
	select {
	case <-c.Done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the child did not end: %s", c.Log)
	}
	assert.Equal(t, 2, c.Cmd.ProcessState.ExitCode(), "it panicked")
	assert.NotContains(t, c.Log.String(), "panic", "its stderr is host.log")

	current := filepath.Join(dir, hostapi.HostLog)
	b, err := os.ReadFile(current)
	require.NoError(t, err)
	assert.Contains(t, string(b), "printed to stdout")
	assert.Contains(t, string(b), "panic: the host's own panic")
	for _, name := range []string{current + ".1", current + ".2", current + ".3"} {
		fi, err := os.Stat(name)
		require.NoError(t, err, "rotated")
		assert.LessOrEqual(t, fi.Size(), int64(4096))
	}
	assert.NoFileExists(t, current+".4")
	b, err = os.ReadFile(current + ".1")
	require.NoError(t, err)
	assert.Contains(t, string(b), "a line of the host's log")
}
