//go:build linux

package runner

import (
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/launch"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/runnerapi"
)

// TestGenerations: each start of an instance gets the next generation,
// across replacements, sessions and a runner closed and opened again; the
// plugin sees its instance name and generation, and its invocation id.
func TestGenerations(t *testing.T) {
	h := newHarness(t, short)
	stopWatch := overlapWatch(t)
	defer stopWatch()
	sess := h.open(0)
	ev := h.events(sess)
	var last runnerapi.Started
	for want := int64(1); want <= 3; want++ {
		st := h.start("gen.a", plugin(t, sess, "identity"))
		assert.Equal(t, want, st.Generation)
		assert.Equal(t, "gen.a", st.Instance)
		assert.NotZero(t, st.PID)
		evs := ev.until(t, 5*time.Second, func(e runnerapi.Event) bool { return strings.HasPrefix(e.Line, "id=") })
		line := evs[len(evs)-1]
		assert.Equal(t, want, line.Generation)
		assert.Contains(t, line.Line, "id=gen.a generation="+strconv.FormatInt(want, 10)+" plugin=identity invocation=")
		if want > 1 {
			// The one it replaced: its exit came first, on the stream.
			var exit *runnerapi.Event
			for _, e := range evs {
				if e.Type == runnerapi.EventExit {
					exit = &e
				}
			}
			require.NotNil(t, exit, "the replaced process's exit: %+v", evs)
			assert.Equal(t, last.Generation, exit.Generation)
			assert.True(t, exit.Exit.Requested)
			assert.Equal(t, runnerapi.Exited, exit.Exit.Outcome)
			assert.False(t, alive(last.PID))
		}
		last = st
	}
	// Another session's start replaces it too.
	other := h.open(0)
	st := h.start("gen.a", plugin(t, other, "cooperative"))
	assert.Equal(t, int64(4), st.Generation)
	e := ev.until(t, 5*time.Second, func(e runnerapi.Event) bool { return e.Type == runnerapi.EventExit })
	assert.Equal(t, last.Generation, e[len(e)-1].Generation)
	// Another instance counts on its own.
	assert.Equal(t, int64(1), h.start("gen.b", plugin(t, other, "cooperative")).Generation)

	dir := h.dir
	h.close(t)
	assert.False(t, alive(st.PID), "Close stopped it")
	h = newHarness(t, short, dir)
	sess = h.open(0)
	assert.Equal(t, int64(5), h.start("gen.a", plugin(t, sess, "cooperative")).Generation)
	assert.Equal(t, int64(2), h.start("gen.b", plugin(t, sess, "cooperative")).Generation)
	assert.Equal(t, int64(5), journalOf(t, dir).last["gen.a"])
}

// TestStopCooperative: a process that exits on its stop signal is Exited,
// at once, and its stop answers its exit; a second stop answers it again.
func TestStopCooperative(t *testing.T) {
	h := newHarness(t, short)
	sess := h.open(0)
	ev := h.events(sess)
	st := h.start("stop.coop", plugin(t, sess, "cooperative"))
	ev.ready(t)
	began := time.Now()
	res, status, e := h.stop(sess, "stop.coop", st.Generation, 5*time.Second)
	require.Equal(t, http.StatusOK, status, "%+v", e)
	assert.Less(t, time.Since(began), 2*time.Second)
	assert.Equal(t, runnerapi.Exited, res.Outcome)
	assert.Equal(t, runnerapi.Exited, res.Exit.Outcome)
	assert.True(t, res.Exit.Requested)
	assert.Equal(t, 0, res.Exit.Code)
	assert.Contains(t, strings.Join(res.Exit.Tail, "\n"), "got terminated, bye")
	assert.False(t, alive(st.PID))
	assert.NotContains(t, journalOf(t, h.dir).live, "stop.coop", "the record ends once the exit is confirmed")

	again, status, _ := h.stop(sess, "stop.coop", st.Generation, 0)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, res.Outcome, again.Outcome)
	_, status, e = h.stop(sess, "stop.coop", st.Generation+1, 0)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, runnerapi.KindNoInstance, e.Kind)
	_, status, e = h.stop("nope", "stop.coop", st.Generation, 0)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, runnerapi.KindNoSession, e.Kind)
}

// TestStopStubborn: a process that ignores its stop signal gets it, then
// SIGTERM once the shutdown timeout is over, then SIGKILL grace later: it
// ends Killed.
func TestStopStubborn(t *testing.T) {
	h := newHarness(t, short)
	sess := h.open(0)
	req := plugin(t, sess, "stubborn")
	req.StopSignal = "SIGINT"
	ev := h.events(sess)
	st := h.start("stop.stubborn", req)
	ev.ready(t)
	began := time.Now()
	res, status, e := h.stop(sess, "stop.stubborn", st.Generation, 300*time.Millisecond)
	took := time.Since(began)
	require.Equal(t, http.StatusOK, status, "%+v", e)
	assert.Equal(t, runnerapi.Killed, res.Outcome)
	assert.Equal(t, "SIGKILL", res.Exit.Signal)
	assert.Equal(t, -1, res.Exit.Code)
	assert.GreaterOrEqual(t, took, 500*time.Millisecond, "shutdown timeout, then grace")
	assert.Less(t, took, 3*time.Second)
	tail := strings.Join(res.Exit.Tail, "\n")
	assert.Regexp(t, `(?s)got interrupt.*got terminated`, tail, "the stop signal, then the interrupt")
	assert.False(t, alive(st.PID))
}

// TestGrandchildrenDie: children a plugin forked, that ignore SIGTERM, do
// not outlive its stop.
func TestGrandchildrenDie(t *testing.T) {
	h := newHarness(t, short)
	sess := h.open(0)
	ev := h.events(sess)
	st := h.start("forker", plugin(t, sess, "forker", "2"))
	// Each child says ready once it has taken SIGTERM for itself, then the
	// forker: a stop before that would end a child without force.
	var pids []int
	ready := 0
	ev.until(t, 10*time.Second, func(e runnerapi.Event) bool {
		if rest, ok := strings.CutPrefix(e.Line, "children "); ok {
			for _, f := range strings.Fields(rest) {
				pids = append(pids, atoi(t, f))
			}
		}
		if strings.HasPrefix(e.Line, "ready") {
			ready++
		}
		return ready == 3 && pids != nil
	})
	require.Len(t, pids, 2)
	for _, pid := range pids {
		require.True(t, alive(pid))
	}
	res, status, e := h.stop(sess, "forker", st.Generation, 200*time.Millisecond)
	require.Equal(t, http.StatusOK, status, "%+v", e)
	assert.Equal(t, runnerapi.Killed, res.Outcome)
	testsupport.WaitGone(t, time.Second, append(pids, st.PID)...)
}

// TestEvents: output lines and an exit of its own arrive on the stream;
// the exit's tail holds the last lines.
func TestEvents(t *testing.T) {
	h := newHarness(t, short)
	sess := h.open(0)
	ev := h.events(sess)
	st := h.start("events", plugin(t, sess, "exit", "3", "one", "two", "three"))
	var lines []string
	evs := ev.until(t, 5*time.Second, func(e runnerapi.Event) bool { return e.Type == runnerapi.EventExit })
	for _, e := range evs {
		assert.Equal(t, "events", e.Instance)
		assert.Equal(t, st.Generation, e.Generation)
		if e.Type == runnerapi.EventOutput {
			lines = append(lines, e.Line)
		}
	}
	assert.Equal(t, []string{"one", "two", "three"}, lines)
	exit := evs[len(evs)-1].Exit
	require.NotNil(t, exit)
	assert.Equal(t, 3, exit.Code)
	assert.False(t, exit.Requested)
	assert.Equal(t, runnerapi.Exited, exit.Outcome)
	assert.Equal(t, []string{"one", "two", "three"}, exit.Tail)
	assert.False(t, exit.At.IsZero())

	// A stop that comes late answers the exit.
	res, status, _ := h.stop(sess, "events", st.Generation, 0)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, 3, res.Exit.Code)
	assert.False(t, res.Exit.Requested)

	// A second stream replaces the first, which ends.
	ev2 := h.events(sess)
	select {
	case _, ok := <-ev.c:
		for ok {
			_, ok = <-ev.c
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first stream did not end")
	}
	h.start("events", plugin(t, sess, "exit", "0", "again"))
	e := ev2.next(t, 5*time.Second)
	assert.Equal(t, "again", e.Line)
}

// TestEventsWaitForTheNextStream: what a session's processes write, and
// their exits, while no stream is connected, or after one broke, go to
// the next stream, in order.
func TestEventsWaitForTheNextStream(t *testing.T) {
	h := newHarness(t, short)
	sess := h.open(0)
	h.keepAlive(sess)
	st := h.start("early", plugin(t, sess, "exit", "4", "one", "two"))
	gone(t, h, "early")
	ev := h.events(sess)
	evs := ev.until(t, 5*time.Second, func(e runnerapi.Event) bool { return e.Type == runnerapi.EventExit })
	var lines []string
	for _, e := range evs {
		if e.Type == runnerapi.EventOutput {
			lines = append(lines, e.Line)
		}
	}
	assert.Equal(t, []string{"one", "two"}, lines, "the lines written before any stream")
	assert.Equal(t, st.Generation, evs[len(evs)-1].Generation)
	assert.Equal(t, 4, evs[len(evs)-1].Exit.Code)

	// The stream goes away; what comes meanwhile waits for the next.
	ev.close()
	require.Eventually(t, func() bool {
		h.r.mu.Lock()
		s := h.r.sessions[sess]
		h.r.mu.Unlock()
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.stream == nil
	}, 5*time.Second, time.Millisecond, "the runner sees the stream gone")
	h.start("later", plugin(t, sess, "exit", "0", "three"))
	gone(t, h, "later")
	evs = h.events(sess).until(t, 5*time.Second, func(e runnerapi.Event) bool { return e.Type == runnerapi.EventExit })
	require.Len(t, evs, 2, "%+v", evs)
	assert.Equal(t, "three", evs[0].Line)
	assert.Equal(t, "later", evs[1].Instance)
}

// gone waits until instance runs no more on h's runner.
func gone(t *testing.T, h *harness, instance string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, in := range h.status().Instances {
			if in.Instance == instance {
				return false
			}
		}
		return true
	}, 5*time.Second, 5*time.Millisecond, "%s exits", instance)
}

// TestStartFailed: a process that exits before it is ready, or a command
// that cannot run, is a 422 with its exit; nothing of it is left, and its
// generation is spent.
func TestStartFailed(t *testing.T) {
	h := newHarness(t, short)
	sess := h.open(0)
	req := plugin(t, sess, "exit", "4", "no luck")
	req.Ready = &launch.Ready{Probe: launch.Probe{TCP: "127.0.0.1:1"}, Timeout: launch.Duration(5000 * time.Millisecond)}
	_, status, e := h.tryStart("fails", req)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%+v", e)
	assert.Equal(t, runnerapi.KindStartFailed, e.Kind)
	require.NotNil(t, e.Exit)
	assert.Equal(t, 4, e.Exit.Code)
	assert.Equal(t, []string{"no luck"}, e.Exit.Tail)

	req = plugin(t, sess, "cooperative")
	req.Command = []string{filepath.Join(t.TempDir(), "missing")}
	_, status, e = h.tryStart("fails", req)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%+v", e)
	require.NotNil(t, e.Exit)
	assert.NotEmpty(t, e.Exit.Error)

	st := h.start("fails", plugin(t, sess, "cooperative"))
	assert.Equal(t, int64(3), st.Generation)
	assert.Len(t, journalOf(t, h.dir).live, 1, "one record: the process that runs")
}

// TestReady: a start answers once its ready check passes, and a second
// start of the instance meanwhile is refused as busy.
func TestReady(t *testing.T) {
	h := newHarness(t, short)
	sess := h.open(0)
	addr := testsupport.FreeAddr(t)
	req := plugin(t, sess, "listen", "300ms", addr)
	req.Ready = &launch.Ready{Probe: launch.Probe{TCP: addr}, Timeout: launch.Duration(10000 * time.Millisecond)}
	answered := make(chan runnerapi.Started, 1)
	began := time.Now()
	go func() {
		var st runnerapi.Started
		status, e := h.call("POST", "/v1/instances/ready/start", req, &st)
		assert.Equal(t, http.StatusOK, status, "%+v", e)
		answered <- st
	}()
	require.Eventually(t, func() bool {
		for _, in := range h.status().Instances {
			if in.Instance == "ready" && in.PID != 0 {
				return true
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond, "in the status while it gets ready")
	_, status, e := h.tryStart("ready", plugin(t, sess, "cooperative"))
	assert.Equal(t, http.StatusConflict, status)
	assert.Equal(t, "busy", e.Kind, "the kind docs/runner-api.md names")
	st := <-answered
	assert.GreaterOrEqual(t, time.Since(began), 300*time.Millisecond)
	assert.Equal(t, int64(1), st.Generation)
}
