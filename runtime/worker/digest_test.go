package worker

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// TestModuleReadOnceWhileUnchanged: a start of a module already compiled
// neither reads nor hashes its file again while stat says it is unchanged;
// rewritten, the next start runs what it holds now.
func TestModuleReadOnceWhileUnchanged(t *testing.T) {
	w := newWorker(t, short)
	dir := t.TempDir()
	bin, err := os.ReadFile(plugWasm)
	require.NoError(t, err)
	path := filepath.Join(dir, "m.wasm")
	require.NoError(t, os.WriteFile(path, bin, 0o644))
	p := &spec.Plugin{Name: "m", Run: spec.Worker, Module: "m.wasm", Args: []string{"cooperative"}}
	run := func() error {
		out := runtimetest.NewRecorder()
		h, err := w.Start(context.Background(), runtime.Request{Dir: dir, Output: out}.For(p))
		if err != nil {
			return err
		}
		require.True(t, out.WaitFor("ready", 30*time.Second), "output: %q", out.Tail())
		_, err = h.Stop(context.Background())
		require.NoError(t, err)
		return nil
	}
	for range 3 {
		require.NoError(t, run())
	}
	assert.Equal(t, 1, w.digests.Reads(), "an unchanged module is read once")

	time.Sleep(10 * time.Millisecond) // a later ctime, on coarse clocks too
	require.NoError(t, os.WriteFile(path, []byte("not wasm"), 0o644))
	assert.ErrorContains(t, run(), "start m: compile m.wasm: ", "the rewritten file was read")

	// Put back: read again, and found compiled.
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, os.WriteFile(path, bin, 0o644))
	require.NoError(t, run())
	assert.Equal(t, 3, w.digests.Reads(), "each rewrite was read")
}
