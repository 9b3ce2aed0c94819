package runtimetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/runtime"
)

// The cases of the suite that stop a plugin: at once when it cooperates,
// after every window when it does not, many times over, and cut short by
// its ctx.

// testCooperativeStop: a plugin that ends when asked is seen to end at
// once, not on a tick: under 100 ms from Stop to its confirmed end in the
// fastest of three rounds (one round on a loaded machine may take longer),
// and never forced.
func testCooperativeStop(t *testing.T, kit Kit) {
	p := newPlacement(t, kit, kit.Timing)
	fastest := time.Hour
	for range 3 {
		out := NewRecorder()
		h := start(t, p, kit, "coop", Cooperative, out)
		require.True(t, out.WaitFor("ready", 10*time.Second), "output: %q", out.Tail())
		select {
		case <-h.Done():
			t.Fatal("Done closed before the plugin ended")
		default:
		}
		began := time.Now()
		outcome, err := h.Stop(context.Background())
		took := time.Since(began)
		require.NoError(t, err)
		assert.Equal(t, runtime.Exited, outcome)
		fastest = min(fastest, took)
		t.Logf("stopped in %s", took)
		requireDone(t, h)
		exit := h.Exit()
		assert.True(t, exit.Requested)
		assert.Equal(t, runtime.Exited, exit.Outcome)
		assert.True(t, exit.Success(), "exit: %v", exit)
		assert.Contains(t, exit.Tail, "ready", "the exit keeps the last lines of output")
		assert.True(t, kit.Gone(t, h))
	}
	assert.Less(t, fastest, 100*time.Millisecond, "a cooperative plugin is seen to stop at once")
}

// slack is how much longer than its windows a stop may take on a noisy
// machine.
const slack = 2 * time.Second

// testStubbornStop: a plugin that ignores its graceful stop and SIGTERM
// is forced after the windows of kit.Timing, all of them (the stop
// ladder of docs/stopping.md): ShutdownTimeout, ExitWindow, KillAfter,
// each zero where the placement has no such step; it ends Killed and
// reports the placement's cause of a forced stop.
func testStubbornStop(t *testing.T, kit Kit) {
	p := newPlacement(t, kit, kit.Timing)
	out := NewRecorder()
	h := start(t, p, kit, "stubborn", Stubborn, out)
	require.True(t, out.WaitFor("ready", 10*time.Second), "output: %q", out.Tail())
	began := time.Now()
	outcome, err := h.Stop(context.Background())
	took := time.Since(began)
	assert.Equal(t, runtime.Killed, outcome)
	var cleanup *runtime.CleanupError
	require.ErrorAs(t, err, &cleanup)
	assert.Equal(t, runtime.Killed, cleanup.Outcome)
	assert.True(t, kit.Forced(err), "the forced stop's cause: %v", err)
	windows := kit.Timing.ShutdownTimeout + kit.Timing.ExitWindow + kit.Timing.KillAfter
	assert.GreaterOrEqual(t, took, windows, "killed only after the graceful stop, the exit window and the termination")
	assert.Less(t, took, windows+slack, "killed once the windows are over")
	t.Logf("killed after %s (windows %s)", took, windows)
	requireDone(t, h)
	assert.Equal(t, runtime.Killed, h.Exit().Outcome)
	assert.True(t, kit.Gone(t, h))
}

func testStopIdempotent(t *testing.T, kit Kit) {
	p := newPlacement(t, kit, kit.Timing)
	out := NewRecorder()
	h := start(t, p, kit, "coop", Cooperative, out)
	require.True(t, out.WaitFor("ready", 10*time.Second))
	var wg sync.WaitGroup
	outcomes := make([]runtime.Outcome, 5)
	errs := make([]error, 5)
	for i := range outcomes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i], errs[i] = h.Stop(context.Background())
		}()
	}
	wg.Wait()
	for i := range outcomes {
		assert.Equal(t, runtime.Exited, outcomes[i])
		assert.NoError(t, errs[i])
	}
	outcome, err := h.Stop(context.Background())
	assert.Equal(t, runtime.Exited, outcome)
	assert.NoError(t, err)
}

// testCancelledStop: a ctx whose deadline comes during the graceful part
// cuts it short.
func testCancelledStop(t *testing.T, kit Kit) {
	ctx, cancel := context.WithTimeout(context.Background(), kit.Timing.ShutdownTimeout/5)
	defer cancel()
	stopStubborn(t, kit, ctx)
}

// testStopWithCancelledCtx: a ctx already cancelled, with no deadline,
// forces the plugin at once (Handle.Stop's contract), and the stop says
// it was forced, its end confirmed.
func testStopWithCancelledCtx(t *testing.T, kit Kit) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := stopStubborn(t, kit, ctx)
	var cleanup *runtime.CleanupError
	if assert.ErrorAs(t, err, &cleanup, "the forced stop is reported") {
		assert.True(t, cleanup.Confirmed(), "and its end confirmed")
	}
}

// testCancelDuringStop: cancelling ctx, with no deadline, while the
// graceful part is under way cuts it short.
func testCancelDuringStop(t *testing.T, kit Kit) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(kit.Timing.ShutdownTimeout/10, cancel)
	stopStubborn(t, kit, ctx)
}

// stopStubborn stops a plugin that ignores its graceful stop with ctx,
// which must cut the graceful part short: the plugin is Killed well
// within the shutdown timeout, and gone. It returns the stop's error.
func stopStubborn(t *testing.T, kit Kit, ctx context.Context) error {
	t.Helper()
	p := newPlacement(t, kit, kit.Timing)
	out := NewRecorder()
	h := start(t, p, kit, "stubborn", Stubborn, out)
	require.True(t, out.WaitFor("ready", 10*time.Second))
	began := time.Now()
	outcome, err := h.Stop(ctx)
	assert.Equal(t, runtime.Killed, outcome)
	assert.Less(t, time.Since(began), kit.Timing.ShutdownTimeout, "a cancelled stop forces at once")
	requireDone(t, h)
	assert.True(t, kit.Gone(t, h))
	return err
}
