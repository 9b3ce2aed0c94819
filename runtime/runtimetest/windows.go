package runtimetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/runtime"
)

// fixedTolerance is how long after the end of its windows a stop with the
// real durations may end: room for a noisy machine with two cores. It may
// not end before them (less a timer's granularity).
const fixedTolerance = 400 * time.Millisecond

// fixedTiming is runtime.DefaultTiming with only the steps the kit's
// placement has: a step zero in kit.Timing (a worker's KillAfter, a
// runner's ExitWindow) is zero here too.
func fixedTiming(kit Kit) runtime.Timing {
	fixed := runtime.DefaultTiming()
	if kit.Timing.ExitWindow == 0 {
		fixed.ExitWindow = 0
	}
	if kit.Timing.KillAfter == 0 {
		fixed.KillAfter = 0
	}
	return fixed
}

// testFixedWindows proves the fixed windows of docs/stopping.md ("The stop
// sequence") with the real durations of docs/semantics.md: a plugin that
// ignores its graceful stop and SIGTERM is Killed once the graceful stop
// (5 s), the exit window (1 s) and the termination (1 s) are over, those
// of them the placement has (7 s for a local process; 6 s for a worker,
// which has no termination, and for a runner's, which has no exit
// window), within fixedTolerance. It reports the placement's cause of a
// forced stop, and its end is confirmed.
//
// It runs in parallel with the other cases: it waits seconds and does
// little else.
func testFixedWindows(t *testing.T, kit Kit) {
	t.Parallel()
	timing := fixedTiming(kit)
	p := newPlacement(t, kit, timing)
	out := NewRecorder()
	h := start(t, p, kit, "stubborn", Stubborn, out)
	require.True(t, out.WaitFor("ready", 10*time.Second), "output: %q", out.Tail())
	began := time.Now()
	outcome, err := h.Stop(context.Background())
	took := time.Since(began)
	windows := timing.ShutdownTimeout + timing.ExitWindow + timing.KillAfter
	t.Logf("killed after %s (windows %s)", took, windows)
	assert.Equal(t, runtime.Killed, outcome)
	var cleanup *runtime.CleanupError
	require.ErrorAs(t, err, &cleanup)
	assert.Equal(t, runtime.Killed, cleanup.Outcome)
	assert.True(t, cleanup.Confirmed(), "the end is confirmed")
	assert.True(t, kit.Forced(err), "the forced stop's cause: %v", err)
	assert.GreaterOrEqual(t, took, windows-10*time.Millisecond, "killed only once the windows are over")
	assert.Less(t, took, windows+fixedTolerance, "killed at the end of the windows")
	requireDone(t, h)
	assert.Equal(t, runtime.Killed, h.Exit().Outcome)
	assert.True(t, kit.Gone(t, h))
}
