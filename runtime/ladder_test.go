package runtime

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// steps is a plugin for the ladder, in memory: it records the steps the
// ladder takes, and ends on the step named by endOn ("" never). The
// ladder's own logic is what is tested here; runtime/runtimetest runs
// it against real processes and modules.
type steps struct {
	mu    sync.Mutex
	taken []string
	endOn string
	end   chan struct{}
	once  sync.Once
}

func newSteps(endOn string) *steps { return &steps{endOn: endOn, end: make(chan struct{})} }

func (s *steps) step(name string, err error) func() error {
	return func() error {
		s.mu.Lock()
		s.taken = append(s.taken, name)
		s.mu.Unlock()
		if name == s.endOn {
			s.once.Do(func() { close(s.end) })
		}
		return err
	}
}

func (s *steps) Taken() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.taken...)
}

var windows = Timing{ShutdownTimeout: time.Second, ExitWindow: 60 * time.Millisecond, KillAfter: 60 * time.Millisecond}

func (s *steps) ladder() Ladder {
	return Ladder{
		Timing:    windows,
		Signal:    s.step("signal", nil),
		Terminate: s.step("terminate", nil),
		Kill:      s.step("kill", nil),
		Gone:      GoneOn(s.end),
		KillWait:  100 * time.Millisecond,
		Missed:    errors.New("missed the exit window"),
		CutShort:  ErrCutShort,
	}
}

func run(l Ladder) (Outcome, error, time.Duration) {
	began := time.Now()
	outcome, causes := l.Run()
	return outcome, causes.ErrorOrNil(), time.Since(began)
}

func TestLadderGracefulEndIsExited(t *testing.T) {
	s := newSteps("signal")
	l := s.ladder()
	l.Signal = s.step("signal", errors.New("lost signal"))
	outcome, err, took := run(l)
	assert.Equal(t, Exited, outcome)
	assert.NoError(t, err, "an end within the graceful part reports no cause, not even a failed signal")
	assert.Equal(t, []string{"signal"}, s.Taken())
	assert.Less(t, took, windows.ShutdownTimeout, "seen at once")
}

func TestLadderStubbornTakesEveryWindow(t *testing.T) {
	s := newSteps("kill")
	l := s.ladder()
	var hooks []string
	l.Forcing = func() { hooks = append(hooks, "forcing") }
	l.Killing = func() { hooks = append(hooks, "killing") }
	l.Kill = s.step("kill", errors.New("send SIGKILL: no such process"))
	outcome, err, took := run(l)
	assert.Equal(t, Killed, outcome)
	assert.Equal(t, []string{"signal", "terminate", "kill"}, s.Taken())
	assert.Equal(t, []string{"forcing", "killing"}, hooks)
	all := windows.ShutdownTimeout + windows.ExitWindow + windows.KillAfter
	assert.GreaterOrEqual(t, took, all)
	assert.Less(t, took, all+time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missed the exit window")
	assert.Contains(t, err.Error(), "no such process")
}

func TestLadderTerminatedEndIsKilled(t *testing.T) {
	s := newSteps("terminate")
	outcome, err, took := run(s.ladder())
	assert.Equal(t, Killed, outcome)
	assert.Equal(t, []string{"signal", "terminate"}, s.Taken())
	assert.ErrorContains(t, err, "missed the exit window")
	assert.Less(t, took, windows.ShutdownTimeout+windows.ExitWindow+windows.KillAfter)
}

func TestLadderUnconfirmed(t *testing.T) {
	s := newSteps("")
	outcome, err, took := run(s.ladder())
	assert.Equal(t, Unconfirmed, outcome)
	assert.ErrorContains(t, err, "still running 100ms after SIGKILL")
	assert.GreaterOrEqual(t, took, windows.ShutdownTimeout+windows.ExitWindow+windows.KillAfter+100*time.Millisecond)
}

// TestLadderHurryKills: a Handle's Stop whose ctx ends kills at once,
// without the termination, and says it was cut short.
func TestLadderHurryKills(t *testing.T) {
	s := newSteps("kill")
	hurry := make(chan struct{})
	close(hurry)
	l := s.ladder()
	l.Hurry, l.HurryKills = hurry, true
	outcome, err, took := run(l)
	assert.Equal(t, Killed, outcome)
	assert.Equal(t, []string{"signal", "kill"}, s.Taken())
	assert.ErrorIs(t, err, ErrCutShort)
	assert.NotContains(t, err.Error(), "missed the exit window")
	assert.Less(t, took, windows.ShutdownTimeout)
}

// TestLadderHurryCutsTheGracefulPart: the runner's forced stop joining a
// graceful one: the interrupt and its grace still come before the kill.
func TestLadderHurryCutsTheGracefulPart(t *testing.T) {
	s := newSteps("kill")
	hurry := make(chan struct{})
	l := s.ladder()
	l.Hurry = hurry
	time.AfterFunc(20*time.Millisecond, func() { close(hurry) })
	outcome, _, took := run(l)
	assert.Equal(t, Killed, outcome)
	assert.Equal(t, []string{"signal", "terminate", "kill"}, s.Taken())
	assert.GreaterOrEqual(t, took, windows.KillAfter)
	assert.Less(t, took, windows.ShutdownTimeout, "the graceful part was cut short")
}

// TestLadderForcedFromTheStart: no Signal is a stop forced from the
// start: no graceful wait, the forced part at once.
func TestLadderForcedFromTheStart(t *testing.T) {
	s := newSteps("terminate")
	l := s.ladder()
	l.Signal = nil
	forcing := false
	l.Forcing = func() { forcing = true }
	outcome, _, took := run(l)
	assert.Equal(t, Killed, outcome)
	assert.True(t, forcing)
	assert.Equal(t, []string{"terminate"}, s.Taken())
	assert.Less(t, took, windows.ShutdownTimeout)
}
