// Package runtimetest is the conformance suite every placement passes:
// one set of tests, run against local processes, workers and remote
// plugins alike, that holds each to what runtime.Placement promises.
package runtimetest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

// Behavior is what a plugin of the suite does.
type Behavior string

// The behaviours a Kit must provide.
const (
	// Cooperative prints "ready", runs until its graceful stop, then
	// exits 0.
	Cooperative Behavior = "cooperative"
	// Stubborn prints "ready" and ignores its graceful stop and SIGTERM:
	// only the kill ends it.
	Stubborn Behavior = "stubborn"
	// Failing prints "one", "two", "three" and exits 3 at once.
	Failing Behavior = "failing"
	// Identity prints one line, "id=ID generation=N plugin=NAME
	// extra=VALUE" with the values of GRAFT_INSTANCE_ID, GRAFT_GENERATION,
	// GRAFT_PLUGIN and EXTRA, then behaves as Cooperative.
	Identity Behavior = "identity"
)

// Kit is what the suite needs of a placement.
type Kit struct {
	// New returns a fresh placement with the windows of timing, which
	// are Timing's or the fixed ones of runtime.DefaultTiming, with
	// the same steps zero; the suite closes it.
	New func(t *testing.T, timing runtime.Timing) runtime.Placement
	// Plugin returns a plugin, named name, that behaves as b.
	Plugin func(t *testing.T, name string, b Behavior) *spec.Plugin
	// Timing is the stop's windows the placement was given, each zero
	// where the placement has no such step: no KillAfter for a worker
	// (no termination before the kill), no ExitWindow for a runner.
	Timing runtime.Timing
	// Forced reports whether the error of a forced stop holds the cause
	// the placement must report (a LocalTerminationTimeout for local
	// processes and workers, a RemoteForced for a runner's).
	Forced func(err error) bool
	// Generation is the generation of a first start: 1.
	Generation int64
	// Gone reports whether nothing is left of a plugin whose Done is
	// closed (no process with its pid, say).
	Gone func(t *testing.T, h runtime.Handle) bool
	// Stable is true where a plugin's id is its instance name and every
	// start of it replaces the last with a larger generation (a runner);
	// false where every start has a fresh id.
	Stable bool
	// Elected is true for a floating placement: the id is the instance
	// name and the generation the election's epoch, a placement runs one
	// start of an instance at a time, and a plugin that exits on its own
	// is started again while its host leads, so its handle goes on.
	Elected bool
}

// Main runs a placement package's tests, then fails them if a goroutine
// or a file descriptor outlived them. Call it from TestMain.
func Main(m *testing.M) {
	fds := openFDs()
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
		if after := openFDs(); after > fds {
			fmt.Fprintf(os.Stderr, "file descriptors leaked: %d open before the tests, %d after\n", fds, after)
			code = 1
		}
	}
	os.Exit(code)
}

// openFDs counts this process's open file descriptors. The runtime's
// poller opens two of its own on first use; a pipe made and closed first
// makes sure they are counted before the tests as well as after.
func openFDs() int {
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}

// Run runs the suite against the placement of kit. The case of the fixed
// windows spends seconds waiting and does little else: it runs beside the
// other cases, which run one after another, rather than after them.
func Run(t *testing.T, kit Kit) {
	t.Run("FixedWindows", func(t *testing.T) { testFixedWindows(t, kit) })
	t.Run("Cases", func(t *testing.T) {
		t.Parallel()
		runCases(t, kit)
	})
}

// runCases runs every case but the fixed windows, one after another.
func runCases(t *testing.T, kit Kit) {
	tests := []struct {
		name string
		test func(*testing.T, Kit)
	}{
		{"Identity", testIdentity},
		{"CooperativeStop", testCooperativeStop},
		{"StubbornStopTakesItsWindows", testStubbornStop},
		{"ExitOnItsOwn", testExitOnItsOwn},
		{"StopIsIdempotent", testStopIdempotent},
		{"CancelledStopForces", testCancelledStop},
		{"StopWithCancelledCtxForces", testStopWithCancelledCtx},
		{"CancelDuringStopForces", testCancelDuringStop},
		{"CancelledStart", testCancelledStart},
		{"CloseStopsAll", testCloseStopsAll},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.test(t, kit) })
	}
}

// newPlacement makes a placement of kit with timing, which the test's
// cleanup closes.
func newPlacement(t *testing.T, kit Kit, timing runtime.Timing) runtime.Placement {
	p := kit.New(t, timing)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	return p
}

func start(t *testing.T, p runtime.Placement, kit Kit, name string, b Behavior, out *Recorder) runtime.Handle {
	t.Helper()
	h, err := p.Start(context.Background(), runtime.Request{
		Project: "conformance",
		Env:     map[string]string{"EXTRA": "from-request"},
		Output:  out,
	}.For(kit.Plugin(t, name, b)))
	require.NoError(t, err)
	return h
}

func testIdentity(t *testing.T, kit Kit) {
	p := newPlacement(t, kit, kit.Timing)
	out := NewRecorder()
	h := start(t, p, kit, "who", Identity, out)
	id := h.Identity()
	require.NotEmpty(t, id.ID)
	assert.Equal(t, kit.Generation, id.Generation)
	want := fmt.Sprintf("id=%s generation=%d plugin=who extra=from-request", id.ID, id.Generation)
	require.True(t, out.WaitFor(want, 10*time.Second), "the plugin sees its identity; output: %q", out.Tail())
	if kit.Elected {
		assert.Equal(t, "who", id.ID, "the id is the instance name")
		_, err := h.Stop(context.Background())
		require.NoError(t, err)
		return
	}

	again := start(t, p, kit, "who", Identity, NewRecorder())
	switch {
	case kit.Stable:
		assert.Equal(t, id.ID, again.Identity().ID, "the id is the instance name")
		assert.Greater(t, again.Identity().Generation, id.Generation, "a new start of an instance has a larger generation")
		select {
		case <-h.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the new start of the instance did not replace the old")
		}
	case id.ID != "" && kit.Generation == 1:
		assert.NotEqual(t, id.ID, again.Identity().ID, "each start has a fresh identity")
	}
	for _, h := range []runtime.Handle{h, again} {
		_, err := h.Stop(context.Background())
		require.NoError(t, err)
	}
}

func testExitOnItsOwn(t *testing.T, kit Kit) {
	p := newPlacement(t, kit, kit.Timing)
	out := NewRecorder()
	h := start(t, p, kit, "failing", Failing, out)
	if kit.Elected {
		testLeaderRestarts(t, h, out)
		return
	}
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a plugin that exits is not seen to")
	}
	exit := h.Exit()
	assert.False(t, exit.Requested)
	assert.Equal(t, 3, exit.Code)
	assert.False(t, exit.Success())
	require.GreaterOrEqual(t, len(exit.Tail), 3)
	assert.Equal(t, []string{"one", "two", "three"}, exit.Tail[len(exit.Tail)-3:])

	began := time.Now()
	outcome, err := h.Stop(context.Background())
	assert.NoError(t, err)
	assert.Equal(t, runtime.Exited, outcome)
	assert.Less(t, time.Since(began), 100*time.Millisecond, "stopping what has exited returns at once")
	assert.True(t, kit.Gone(t, h))
}

// testLeaderRestarts: a leader starts its plugin again when it exits on
// its own; the handle goes on, and stopping it stops the plugin.
func testLeaderRestarts(t *testing.T, h runtime.Handle, out *Recorder) {
	require.Eventually(t, func() bool { return strings.Count(out.String(), "three") >= 2 }, 10*time.Second, 10*time.Millisecond,
		"the leader starts its plugin again; output: %q", out.Tail())
	select {
	case <-h.Done():
		t.Fatal("the handle ended with its plugin's exit")
	default:
	}
	outcome, err := h.Stop(context.Background())
	assert.NoError(t, err)
	assert.Equal(t, runtime.Exited, outcome)
	requireDone(t, h)
	assert.True(t, h.Exit().Requested)
}

func testCancelledStart(t *testing.T, kit Kit) {
	p := newPlacement(t, kit, kit.Timing)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h, err := p.Start(ctx, runtime.Request{Project: "conformance", Output: NewRecorder()}.For(kit.Plugin(t, "never", Cooperative)))
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, h)
}

func testCloseStopsAll(t *testing.T, kit Kit) {
	p := kit.New(t, kit.Timing)
	var hs []runtime.Handle
	for i := range 3 {
		out := NewRecorder()
		hs = append(hs, start(t, p, kit, fmt.Sprintf("p%d", i), Cooperative, out))
		require.True(t, out.WaitFor("ready", 10*time.Second))
	}
	require.NoError(t, p.Close())
	for _, h := range hs {
		requireDone(t, h)
		assert.True(t, h.Exit().Requested)
		assert.True(t, kit.Gone(t, h))
	}
}

func requireDone(t *testing.T, h runtime.Handle) {
	t.Helper()
	select {
	case <-h.Done():
	default:
		t.Fatal("Stop returned before Done closed")
	}
}
