//go:build unix

package worker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// TestNoPipesUnderMounts: a module that opens a named pipe under a mount,
// which no one writes, is refused at once, rather than blocked in an
// open that no close of the module ends; so its stop is always
// confirmed: Exited, here at once, since it ended by itself.
func TestNoPipesUnderMounts(t *testing.T) {
	w := newWorker(t, short)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "in"), 0o755))
	fifo := filepath.Join(dir, "in", "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	p := plug("fifo", "fifo")
	p.Mounts = []spec.Mount{{Host: "in", Guest: "/in"}}
	out := runtimetest.NewRecorder()
	h, err := w.Start(context.Background(), runtime.Request{Dir: dir, Output: out}.For(p))
	require.NoError(t, err)
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the module still waits on a pipe no one writes")
	}
	assert.Contains(t, strings.Join(out.Tail(), "\n"), `read "" open /in/fifo: Not supported`)
	outcome, err := h.Stop(context.Background())
	assert.Equal(t, runtime.Exited, outcome)
	assert.NoError(t, err)
	assert.True(t, h.Exit().Success())
}
