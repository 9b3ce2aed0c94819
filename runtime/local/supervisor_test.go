//go:build linux

package local

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

// stamps is an Output that notes when each line containing mark came.
type stamps struct {
	mark string
	mu   sync.Mutex
	at   []time.Time
	tail []string
}

func (s *stamps) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if strings.Contains(line, s.mark) {
			s.at = append(s.at, time.Now())
		}
		s.tail = append(s.tail, line)
	}
	return len(p), nil
}

func (s *stamps) Tail() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tail...)
}

func (s *stamps) times() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.at...)
}

// waitState waits until the supervisor's state satisfies ok.
func waitState(t *testing.T, s *runtime.Supervisor, d time.Duration, ok func(runtime.State) bool) runtime.State {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		st := s.State()
		if ok(st) {
			return st
		}
		require.True(t, time.Now().Before(deadline), "state never came: %+v", st)
		time.Sleep(5 * time.Millisecond)
	}
}

func retrying(delay, max time.Duration, attempts int) *spec.Retry {
	return &spec.Retry{Delay: spec.FromStd(delay), Factor: 2, Max: spec.FromStd(max), Attempts: attempts}
}

// TestRetryBacksOff: a plugin that keeps failing is started again after
// delay, delay×2, delay×4 (each ±20%), and stays failed after its
// attempts, with its exit and output as the error. The gaps are timed
// between the plugin's outputs, so they hold each start's own time too:
// two programs run (the init of the plugin's namespace, this test binary
// again, then the plugin), slow ones under -race, and slower on a loaded
// machine (CI saw 250 ms more than the schedule). The lower bounds are
// what a wrong schedule breaks (and Backoff's own test checks the
// schedule exactly); the upper ones allow a second for the starts.
func TestRetryBacksOff(t *testing.T) {
	l := newLocal(t, short)
	p := helper("crashy", "exit", "1", "boom: cannot open /var/lib/crashy")
	p.Retry = retrying(100*time.Millisecond, time.Second, 3)
	out := &stamps{mark: "boom"}
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: out}.For(p))
	require.NoError(t, s.Start(context.Background()), "the process started; that it exits is another matter")
	st := waitState(t, s, 10*time.Second, func(st runtime.State) bool {
		return st.Status == runtime.Failed && st.Restarts == 3 && st.NextRetry.IsZero()
	})
	assert.Contains(t, st.LastError, "exited on its own: exit status 1; last output: ")
	assert.Contains(t, st.LastError, "boom: cannot open /var/lib/crashy")

	at := out.times()
	require.Len(t, at, 4, "the first start and three retries")
	for i, base := range []time.Duration{100, 200, 400} {
		base *= time.Millisecond
		gap := at[i+1].Sub(at[i])
		t.Logf("retry %d after %s", i+1, gap)
		assert.GreaterOrEqual(t, gap, base*8/10, "retry %d", i+1)
		assert.LessOrEqual(t, gap, base*12/10+time.Second, "retry %d", i+1)
	}
	time.Sleep(300 * time.Millisecond)
	assert.Len(t, out.times(), 4, "no start after the attempts ran out")
	_, err := s.Stop(context.Background())
	assert.NoError(t, err)
}

// TestNoRetryStaysFailed: without retry, a plugin that exits stays failed.
func TestNoRetryStaysFailed(t *testing.T) {
	l := newLocal(t, short)
	out := &stamps{mark: "bye"}
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: out}.For(helper("once", "exit", "2", "bye")))
	require.NoError(t, s.Start(context.Background()))
	st := waitState(t, s, 10*time.Second, func(st runtime.State) bool { return st.Status == runtime.Failed })
	assert.Zero(t, st.Restarts)
	assert.True(t, st.NextRetry.IsZero())
	assert.Zero(t, st.PID)
	time.Sleep(200 * time.Millisecond)
	assert.Len(t, out.times(), 1)
	_, err := s.Stop(context.Background())
	assert.NoError(t, err)
	assert.Equal(t, runtime.Stopped, s.State().Status)
}

// TestStopCancelsRetry: stopping a failed plugin cancels its next start.
func TestStopCancelsRetry(t *testing.T) {
	l := newLocal(t, short)
	p := helper("crashy", "exit", "1", "boom")
	p.Retry = retrying(300*time.Millisecond, time.Second, 0)
	out := &stamps{mark: "boom"}
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: out}.For(p))
	require.NoError(t, s.Start(context.Background()))
	waitState(t, s, 10*time.Second, func(st runtime.State) bool { return !st.NextRetry.IsZero() })
	began := time.Now()
	outcome, err := s.Stop(context.Background())
	assert.NoError(t, err)
	assert.Equal(t, runtime.Exited, outcome)
	assert.Less(t, time.Since(began), 100*time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	assert.Len(t, out.times(), 1, "the retry was cancelled")
	assert.Equal(t, runtime.Stopped, s.State().Status)
	assert.Error(t, s.Start(context.Background()), "a stopped supervisor starts nothing")
}

// TestSupervisorStop: a running plugin stops in order and the state says
// so; its identity and pid were reported while it ran.
func TestSupervisorStop(t *testing.T) {
	l := newLocal(t, short)
	out := &stamps{mark: "ready"}
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: out}.For(helper("coop", "cooperative")))
	require.NoError(t, s.Start(context.Background()))
	st := s.State()
	assert.Equal(t, runtime.Running, st.Status)
	assert.NotZero(t, st.PID)
	assert.NotEmpty(t, st.Identity.ID)
	outcome, err := s.Stop(context.Background())
	require.NoError(t, err)
	assert.Equal(t, runtime.Exited, outcome)
	st = s.State()
	assert.Equal(t, runtime.Stopped, st.Status)
	assert.Zero(t, st.PID)
	assert.Empty(t, st.LastError)
}

// TestTermReachesAStartingProcess: a term set before a start reaches the
// process as soon as it runs, before its ready check passes, so that a
// host frozen while its floating plugin starts leaves the process a term
// all the same: the init of the namespace stops it at the term's end, and
// the start fails long before its ready timeout.
func TestTermReachesAStartingProcess(t *testing.T) {
	l := newLocal(t, short)
	testsupport.NeedNamespace(t, l.Isolation().Err)
	p := helper("relay", "cooperative")
	p.Ready = &spec.Ready{Probe: launch.Probe{Exec: []string{"test", "-f", "never"}}, Timeout: spec.FromStd(20 * time.Second)}
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: &stamps{}}.For(p))
	t.Cleanup(func() { s.Stop(context.Background()) })
	require.NoError(t, s.SetTerm(300*time.Millisecond))
	began := time.Now()
	err := s.Start(context.Background())
	took := time.Since(began)
	require.Error(t, err, "the process was stopped at the end of its term")
	assert.Less(t, took, 10*time.Second, "stopped at the end of its term, not at the ready timeout: %v", err)
	assert.GreaterOrEqual(t, took, 300*time.Millisecond, "not before the term's end")
}
