//go:build linux

package local

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/runtime"
)

// waitLine waits until out has a line equal to want.
func waitLine(t *testing.T, out *stamps, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !slices.Contains(out.Tail(), want) {
		require.True(t, time.Now().Before(deadline), "no line %q in %q", want, out.Tail())
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReloadAndUpdateInPlace: a reload signals the running process, which
// keeps its pid and identity; an update changes the signal of its stop
// and its retry policy without a restart.
func TestReloadAndUpdateInPlace(t *testing.T) {
	l := newLocal(t, short)
	p := helper("web", "reloader")
	out := &stamps{mark: "ready"}
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: out}.For(p))
	t.Cleanup(func() { s.Stop(context.Background()) })
	require.NoError(t, s.Start(context.Background()))
	waitLine(t, out, "ready")
	before := s.State()

	require.NoError(t, s.Reload(p), "the default reloadSignal, SIGHUP")
	waitLine(t, out, "got hangup")
	q := *p
	q.ReloadSignal = "SIGUSR1"
	require.NoError(t, s.Reload(&q))
	waitLine(t, out, "got user defined signal 1")
	after := s.State()
	assert.Equal(t, before.PID, after.PID)
	assert.Equal(t, before.Identity, after.Identity)
	assert.Equal(t, runtime.Running, after.Status)

	// An update: a retry where there was none, and SIGINT to stop.
	u := q
	u.Retry = retrying(50*time.Millisecond, time.Second, 1)
	u.StopSignal = "SIGINT"
	s.Update(&u)
	assert.Equal(t, before.PID, s.State().PID, "an update restarts nothing")
	require.NoError(t, syscall.Kill(before.PID, syscall.SIGKILL))
	st := waitState(t, s, 20*time.Second, func(st runtime.State) bool { return st.Status == runtime.Running && st.PID != before.PID })
	assert.Equal(t, 1, st.Restarts, "the new retry policy restarted it")
	deadline := time.Now().Add(20 * time.Second)
	for len(out.times()) < 2 { // its handlers are set once it says ready
		require.True(t, time.Now().Before(deadline), "the restarted process never said ready")
		time.Sleep(5 * time.Millisecond)
	}

	_, err := s.Stop(context.Background())
	require.NoError(t, err)
	waitLine(t, out, "got interrupt")
}

// TestReloadNotRunning: a plugin that does not run cannot reload.
func TestReloadNotRunning(t *testing.T) {
	l := newLocal(t, short)
	p := helper("gone", "exit", "1")
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: &stamps{}}.For(p))
	t.Cleanup(func() { s.Stop(context.Background()) })
	_ = s.Start(context.Background())
	waitState(t, s, 20*time.Second, func(st runtime.State) bool { return st.Status == runtime.Failed })
	err := s.Reload(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reload gone: it is failed, not running")
}

// TestReloadKills: a process that dies of its reloadSignal fails as one
// that exited on its own, and its retry starts it again.
func TestReloadKills(t *testing.T) {
	l := newLocal(t, short)
	p := helper("plain", "cooperative") // SIGHUP's default action: it dies
	p.Retry = retrying(50*time.Millisecond, time.Second, 1)
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: &stamps{}}.For(p))
	t.Cleanup(func() { s.Stop(context.Background()) })
	require.NoError(t, s.Start(context.Background()))
	pid := s.State().PID
	require.NoError(t, s.Reload(p))
	st := waitState(t, s, 20*time.Second, func(st runtime.State) bool { return st.Status == runtime.Running && st.PID != pid })
	assert.Equal(t, 1, st.Restarts)
	assert.Contains(t, st.LastError, "signal: SIGHUP")
}
