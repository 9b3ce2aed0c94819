//go:build linux

package local

import (
	"bufio"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/runtime"
)

// TestLeftoverLadder: a leftover that ignores SIGTERM gets SIGKILL
// killAfter later, and the ladder reports Killed, with no cause, once it
// is gone.
func TestLeftoverLadder(t *testing.T) {
	cmd, m, done := startStubborn(t)
	var killing time.Time
	l := LeftoverLadder([]proc.Member{m}, 300*time.Millisecond)
	l.Killing = func() { killing = time.Now() }
	began := time.Now()
	outcome, causes := l.Run()
	assert.Equal(t, runtime.Killed, outcome)
	assert.NoError(t, causes.ErrorOrNil())
	assert.GreaterOrEqual(t, killing.Sub(began), 300*time.Millisecond, "SIGKILL killAfter after SIGTERM")
	<-done
	assert.Equal(t, "signal: killed", cmd.ProcessState.String())
}

// TestLeftoverGoneCut: the ladder's wait ends when its cut is closed,
// and reports a member that still runs as not gone.
func TestLeftoverGoneCut(t *testing.T) {
	_, m, _ := startStubborn(t)
	cut := make(chan struct{})
	close(cut)
	began := time.Now()
	assert.False(t, LeftoverLadder([]proc.Member{m}, time.Second).Gone(time.Minute, cut))
	assert.Less(t, time.Since(began), 10*time.Second, "the cut ended the wait, not its minute")
}

// startStubborn starts a helper that ignores SIGTERM and returns it once
// it does, as a Member, with a channel closed once it has been reaped.
// The test's cleanup kills it.
func startStubborn(t *testing.T) (*exec.Cmd, proc.Member, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=stubborn")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
	}
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	require.Contains(t, line, "ready", "its handlers are set: it ignores SIGTERM")
	start, err := proc.StartTime(cmd.Process.Pid)
	require.NoError(t, err)
	m, ok := proc.Lookup(cmd.Process.Pid, start)
	require.True(t, ok, "it runs")
	return cmd, m, done
}
