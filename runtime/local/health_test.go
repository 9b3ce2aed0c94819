//go:build linux

package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/health"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

// TestUnhealthyReplaced: a plugin whose exec health check fails
// failures times in a row is replaced, as a restart, by a new process;
// when the new one fails its checks too without one passing, it is not
// replaced again at once: without retry, it stays failed, saying why.
func TestUnhealthyReplaced(t *testing.T) {
	l := newLocal(t, short)
	dir := t.TempDir()
	okFile := filepath.Join(dir, "ok")
	require.NoError(t, os.WriteFile(okFile, nil, 0o644))
	p := helper("api", "cooperative")
	p.Health = &spec.Health{Probe: launch.Probe{Exec: []string{"test", "-e", okFile}}, Interval: spec.FromStd(30 * time.Millisecond), Timeout: spec.FromStd(5 * time.Second), Failures: 2}
	s := runtime.NewSupervisor(l, runtime.Request{Dir: dir, Output: &stamps{}}.For(p))
	require.NoError(t, s.Start(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.Await(ctx, spec.UntilHealthy))
	first := s.State()
	assert.Equal(t, health.Healthy, first.Health)

	require.NoError(t, os.Remove(okFile))
	st := waitState(t, s, 10*time.Second, func(st runtime.State) bool {
		return st.Restarts == 1 && st.Status == runtime.Running
	})
	assert.NotEqual(t, first.Identity.ID, st.Identity.ID, "a new process")
	assert.NotEqual(t, first.PID, st.PID)

	st = waitState(t, s, 10*time.Second, func(st runtime.State) bool { return st.Status == runtime.Failed })
	assert.Equal(t, 1, st.Restarts, "it kept failing: no second replacement without retry")
	assert.Contains(t, st.LastError, "unhealthy: 2 health checks failed in a row; the last: test: exit status 1")
	assert.Zero(t, st.PID)
	_, err := s.Stop(context.Background())
	assert.NoError(t, err)
}

// TestHealthUpdatedInPlace: a new health check given to a running local
// plugin (Update) replaces its checks at once, the process running on:
// one that fails, with many failures allowed, and then one that passes,
// makes it healthy with the same pid; a health check removed leaves it
// without a verdict, still running.
func TestHealthUpdatedInPlace(t *testing.T) {
	l := newLocal(t, short)
	dir := t.TempDir()
	p := helper("api", "cooperative")
	p.Health = &spec.Health{Probe: launch.Probe{Exec: []string{"false"}}, Interval: spec.FromStd(30 * time.Millisecond), Timeout: spec.FromStd(5 * time.Second), Failures: 1000}
	s := runtime.NewSupervisor(l, runtime.Request{Dir: dir, Output: &stamps{}}.For(p))
	require.NoError(t, s.Start(context.Background()))
	first := waitState(t, s, 10*time.Second, func(st runtime.State) bool { return st.HealthError != "" })
	assert.NotEqual(t, health.Healthy, first.Health)

	q := *p
	q.Health = &spec.Health{Probe: launch.Probe{Exec: []string{"true"}}, Interval: spec.FromStd(30 * time.Millisecond), Timeout: spec.FromStd(5 * time.Second), Failures: 3}
	require.NoError(t, s.Update(context.Background(), &q))
	st := waitState(t, s, 10*time.Second, func(st runtime.State) bool { return st.Health == health.Healthy })
	assert.Equal(t, first.PID, st.PID, "the same process")
	assert.Equal(t, first.Identity, st.Identity)
	assert.Zero(t, st.Restarts)

	r := q
	r.Health = nil
	require.NoError(t, s.Update(context.Background(), &r))
	st = s.State()
	assert.Empty(t, st.Health, "no check, no verdict")
	assert.Equal(t, runtime.Running, st.Status)
	assert.Equal(t, first.PID, st.PID)
	_, err := s.Stop(context.Background())
	assert.NoError(t, err)
}
