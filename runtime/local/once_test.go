//go:build linux

package local

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// TestOnceCompletes: a one-shot that exits 0 is completed, not failed,
// and is not retried though it has a retry; Await sees it started, ready
// and completed.
func TestOnceCompletes(t *testing.T) {
	l := newLocal(t, short)
	p := helper("migrate", "exit", "0", "migrated")
	p.Once.On = true
	p.Retry = retrying(50*time.Millisecond, time.Second, 0)
	out := &stamps{mark: "migrated"}
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: out}.For(p))
	require.NoError(t, s.Start(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.Await(ctx, spec.UntilCompleted))
	for _, c := range []spec.Condition{spec.UntilStarted, spec.UntilReady} {
		assert.NoError(t, s.Await(ctx, c), "a completed one-shot was %s", c)
	}
	st := s.State()
	assert.Equal(t, runtime.Completed, st.Status)
	assert.Zero(t, st.PID)
	assert.True(t, st.NextRetry.IsZero(), "retry is for failures only")
	time.Sleep(200 * time.Millisecond)
	assert.Len(t, out.times(), 1, "a completed one-shot runs once")
	_, err := s.Stop(context.Background())
	assert.NoError(t, err)
}

// TestOnceFailsThroughRetries: a one-shot that exits non-zero is retried
// on its schedule, Await waiting through the retries, and fails Await
// once no retry is due.
func TestOnceFailsThroughRetries(t *testing.T) {
	l := newLocal(t, short)
	p := helper("migrate", "exit", "3", "no database")
	p.Once.On = true
	p.Retry = retrying(50*time.Millisecond, time.Second, 2)
	out := &stamps{mark: "no database"}
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: out}.For(p))
	require.NoError(t, s.Start(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.Await(ctx, spec.UntilCompleted)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "migrate failed before it was completed: exited on its own: exit status 3")
	assert.Len(t, out.times(), 3, "the first run and two retries")
	assert.Equal(t, 2, s.State().Restarts)
	_, err = s.Stop(context.Background())
	assert.NoError(t, err)
}

// TestAwaitStarted: the condition started comes with the process's exec,
// before its ready check passes.
func TestAwaitStarted(t *testing.T) {
	l := newLocal(t, short)
	p := helper("slowready", "cooperative")
	p.Ready = &spec.Ready{Probe: launch.Probe{Exec: []string{"sleep", "0.5"}}, Timeout: spec.FromStd(10 * time.Second)}
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: &stamps{}}.For(p))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- s.Await(ctx, spec.UntilStarted) }()
	// Await of a supervisor not yet started waits: it is not stopped.
	startErr := make(chan error, 1)
	go func() { startErr <- s.Start(ctx) }()
	require.NoError(t, <-started)
	assert.Equal(t, runtime.Starting, s.State().Status, "started, and not yet ready")
	require.NoError(t, <-startErr)
	assert.NoError(t, s.Await(ctx, spec.UntilReady))
	_, err := s.Stop(context.Background())
	assert.NoError(t, err)
	assert.Error(t, s.Await(ctx, spec.UntilReady), "a stopped plugin is never ready again")
}

// TestOnceStopped: a one-shot stopped while it runs goes through the stop
// sequence like any plugin: its stop signal, its exit confirmed. It is
// stopped, not completed, and Await says so.
func TestOnceStopped(t *testing.T) {
	l := newLocal(t, short)
	p := helper("migrate", "cooperative")
	p.Once.On = true
	out := &stamps{mark: "stopping"}
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: out}.For(p))
	require.NoError(t, s.Start(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waited := make(chan error, 1)
	go func() { waited <- s.Await(ctx, spec.UntilCompleted) }()
	outcome, err := s.Stop(context.Background())
	require.NoError(t, err)
	assert.Equal(t, runtime.Exited, outcome, "it exited at its stop signal")
	assert.True(t, s.LastExit().Requested)
	assert.Equal(t, runtime.Stopped, s.State().Status)
	err = <-waited
	require.Error(t, err)
	assert.Contains(t, err.Error(), "migrate was stopped before it was completed")
}

// TestStartUntil: a start goes as far as StartUntil says, and reports each
// condition on the way: a plugin to ready, a one-shot to its completion
// whatever it is asked, with the identity and pid of its run.
func TestStartUntil(t *testing.T) {
	l := newLocal(t, short)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	p := helper("migrate", "exit", "0", "migrated")
	p.Once.On = true
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: &stamps{mark: "migrated"}}.For(p))
	var got []spec.Condition
	st, err := s.StartUntil(ctx, spec.UntilReady, func(c spec.Condition) { got = append(got, c) })
	require.NoError(t, err)
	assert.Equal(t, runtime.Completed, s.State().Status, "a one-shot goes until it completed")
	assert.Equal(t, []spec.Condition{spec.UntilStarted, spec.UntilReady}, got, "its completion is its step's success")
	assert.NotEmpty(t, st.Identity.ID, "the identity of its run")
	_, err = s.Stop(context.Background())
	require.NoError(t, err)

	p = helper("web", "cooperative")
	s = runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: runtimetest.NewRecorder()}.For(p))
	got = nil
	st, err = s.StartUntil(ctx, spec.UntilReady, func(c spec.Condition) { got = append(got, c) })
	require.NoError(t, err)
	assert.Equal(t, runtime.Running, s.State().Status)
	assert.Equal(t, []spec.Condition{spec.UntilStarted, spec.UntilReady}, got)
	assert.NotZero(t, st.PID)
	_, err = s.Stop(context.Background())
	require.NoError(t, err)
}

// TestOnceTimeoutEndsRetries: a one-shot's once.timeout counts from its
// first start, its retries included: a one-shot that keeps failing with
// retries left is failed for good at its timeout, and no retry follows.
func TestOnceTimeoutEndsRetries(t *testing.T) {
	l := newLocal(t, short)
	p := helper("migrate", "exit", "3", "no database")
	p.Once = spec.Once{On: true, Timeout: spec.FromStd(400 * time.Millisecond)}
	p.Retry = retrying(50*time.Millisecond, 100*time.Millisecond, 0) // retries without end
	out := &stamps{mark: "no database"}
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: out}.For(p))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := s.StartUntil(ctx, spec.UntilReady, func(spec.Condition) {})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did not complete within 400 millis (once.timeout)")
	st := s.State()
	assert.Equal(t, runtime.Failed, st.Status)
	assert.True(t, st.NextRetry.IsZero(), "no retry after its timeout")
	runs := len(out.times())
	assert.Greater(t, runs, 1, "it was retried before its timeout")
	time.Sleep(300 * time.Millisecond)
	assert.Len(t, out.times(), runs, "and not after")
	_, err = s.Stop(context.Background())
	assert.NoError(t, err)
}
