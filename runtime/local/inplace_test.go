//go:build linux

package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
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
	p.ReloadSignal = "SIGHUP"
	out := &stamps{mark: "ready"}
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: out}.For(p))
	t.Cleanup(func() { s.Stop(context.Background()) })
	require.NoError(t, s.Start(context.Background()))
	waitLine(t, out, "ready")
	before := s.State()

	require.NoError(t, s.Reload(context.Background(), p), "reloadSignal: SIGHUP")
	waitLine(t, out, "got hangup")
	q := *p
	q.ReloadSignal = "SIGUSR1"
	require.NoError(t, s.Reload(context.Background(), &q))
	waitLine(t, out, "got user defined signal 1")
	after := s.State()
	assert.Equal(t, before.PID, after.PID)
	assert.Equal(t, before.Identity, after.Identity)
	assert.Equal(t, runtime.Running, after.Status)

	// An update: a retry where there was none, and SIGINT to stop.
	u := q
	u.Retry = retrying(50*time.Millisecond, time.Second, 1)
	u.StopSignal = "SIGINT"
	require.NoError(t, s.Update(context.Background(), &u))
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
	p.ReloadSignal = "SIGHUP"
	err := s.Reload(context.Background(), p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reload gone: it is failed, not running")
}

// TestReloadKills: a process that dies of its reloadSignal fails the
// reload, and as one that exited on its own, and its retry starts it
// again.
func TestReloadKills(t *testing.T) {
	l := newLocal(t, short)
	p := helper("plain", "cooperative") // SIGHUP's default action: it dies
	p.Retry = retrying(50*time.Millisecond, time.Second, 1)
	p.ReloadSignal = "SIGHUP"
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: &stamps{}}.For(p))
	t.Cleanup(func() { s.Stop(context.Background()) })
	require.NoError(t, s.Start(context.Background()))
	pid := s.State().PID
	err := s.Reload(context.Background(), p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reload plain: it exited after the reload")
	st := waitState(t, s, 20*time.Second, func(st runtime.State) bool { return st.Status == runtime.Running && st.PID != pid })
	assert.Equal(t, 1, st.Restarts)
	assert.Contains(t, st.LastError, "signal: SIGHUP")
}

// TestReloadChecked: a reload's check runs first, in the plugin's
// directory, and when it fails nothing is signalled; a reload by command
// runs the command there; after either, the process must pass its ready
// probe again, or the reload fails.
func TestReloadChecked(t *testing.T) {
	l := newLocal(t, short)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "conf"), []byte("good\n"), 0o644))
	p := helper("web", "reloader")
	p.Ready = &spec.Ready{Probe: launch.Probe{Exec: []string{"test", "-f", "up"}}, Timeout: spec.FromStd(3 * time.Second)}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "up"), nil, 0o644))
	p.Reload = &launch.Reload{Signal: "SIGHUP", Check: []string{"sh", "-c", `grep -q good conf || { echo "conf: line 1: bad directive" >&2; exit 1; }`}}
	out := &stamps{mark: "ready"}
	s := runtime.NewSupervisor(l, runtime.Request{Dir: dir, Output: out}.For(p))
	t.Cleanup(func() { s.Stop(context.Background()) })
	require.NoError(t, s.Start(context.Background()))
	waitLine(t, out, "ready")
	pid := s.State().PID

	require.NoError(t, s.Reload(context.Background(), p), "a config its check passes")
	waitLine(t, out, "got hangup")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "conf"), []byte("bad\n"), 0o644))
	err := s.Reload(context.Background(), p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "its check [sh -c")
	assert.Contains(t, err.Error(), "conf: line 1: bad directive", "the check's output")
	assert.Contains(t, err.Error(), "nothing was signalled")
	assert.False(t, errors.As(err, new(*runtime.ReloadUnconfirmed)), "the old config is known to be in effect")
	time.Sleep(200 * time.Millisecond)
	hangups := 0
	for _, l := range out.Tail() {
		if l == "got hangup" {
			hangups++
		}
	}
	assert.Equal(t, 1, hangups, "a failed check signals nothing")

	// By command, run in its directory.
	q := *p
	q.Reload = &launch.Reload{Command: []string{"sh", "-c", "touch reloaded"}}
	require.NoError(t, s.Reload(context.Background(), &q))
	assert.FileExists(t, filepath.Join(dir, "reloaded"))
	q.Reload = &launch.Reload{Command: []string{"sh", "-c", "echo admin API refused >&2; exit 3"}}
	err = s.Reload(context.Background(), &q)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "admin API refused")

	// A reload after which the ready probe fails.
	require.NoError(t, os.Remove(filepath.Join(dir, "up")))
	q.Reload = &launch.Reload{Signal: "SIGUSR1"}
	err = s.Reload(context.Background(), &q)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "after the reload its exec check did not pass: not ready after 3 seconds: test: exit status 1", "what its last attempt found")
	assert.True(t, errors.As(err, new(*runtime.ReloadUnconfirmed)), "signalled: which config is in effect is not known")
	assert.Equal(t, pid, s.State().PID, "every reload left the process running")
	assert.Equal(t, runtime.Running, s.State().Status)
}
