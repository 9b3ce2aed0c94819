//go:build linux

package local

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
)

// TestSignalAndStarted: Started sees the handle before Start returns; a
// signal through the handle reaches the whole family, the process ends as
// one that exited on its own, and a signal after the reap does nothing.
func TestSignalAndStarted(t *testing.T) {
	var started []runtime.Handle
	l := New(Options{Timing: short, Started: func(h runtime.Handle) { started = append(started, h) }})
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	out := runtimetest.NewRecorder()
	h, err := l.Start(context.Background(), runtime.Request{Dir: t.TempDir(), Output: out}.For(helper("forker", "forker", "2")))
	require.NoError(t, err)
	require.Equal(t, []runtime.Handle{h}, started)
	require.True(t, out.WaitFor("children ", 10*time.Second))
	waitReady(t, out, 3)
	pids := pidsAfter(t, out, "children ")

	s, ok := h.(interface{ Signal(syscall.Signal) error })
	require.True(t, ok)
	require.NoError(t, s.Signal(syscall.SIGKILL))
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("not gone after SIGKILL to its family")
	}
	testsupport.WaitGone(t, time.Second, pids...)
	exit := h.Exit()
	assert.False(t, exit.Requested)
	assert.Equal(t, "SIGKILL", exit.Signal)
	assert.NoError(t, s.Signal(syscall.SIGKILL), "after the reap: nothing to do")
}
