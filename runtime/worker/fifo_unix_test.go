//go:build unix

package worker

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// TestBlockedInTheHostsFiles: a module blocked where no close reaches it,
// opening a named pipe under a mount that no one writes, is closed all the
// same: its stop ends Killed killWait after the module was closed, and its
// goroutine returns once the call does (here, once the test opens the
// pipe's other end).
func TestBlockedInTheHostsFiles(t *testing.T) {
	defer func(d time.Duration) { killWait = d }(killWait)
	killWait = 300 * time.Millisecond
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
	require.True(t, out.WaitFor("ready", 10*time.Second))
	time.Sleep(100 * time.Millisecond) // into the open

	began := time.Now()
	outcome, err := h.Stop(context.Background())
	took := time.Since(began)
	assert.Equal(t, runtime.Killed, outcome)
	var timeout *runtime.LocalTerminationTimeout
	require.ErrorAs(t, err, &timeout)
	assert.Contains(t, err.Error(), "still in a host call 300ms after it was closed: it runs none of its code again")
	assert.Less(t, took, short.ShutdownTimeout+short.ExitWindow+killWait+2*time.Second)
	assert.Equal(t, "terminated", h.Exit().Error)

	m := h.(*module)
	select {
	case <-m.returned:
		t.Fatal("the open of a pipe no one writes returned")
	default:
	}
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	require.NoError(t, err)
	f.Close()
	select {
	case <-m.returned:
	case <-time.After(10 * time.Second):
		t.Fatal("the module's goroutine did not return once its call did")
	}
	assert.NotContains(t, out.Tail(), `read "" <nil>`, "it ran none of its code again")
}
