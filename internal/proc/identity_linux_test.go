package proc

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartTimeAndLookup(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	start, err := StartTime(pid)
	require.NoError(t, err)
	self, err := StartTime(os.Getpid())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, start, self, "started after this process")

	m, ok := Lookup(pid, start)
	require.True(t, ok)
	assert.Equal(t, pid, m.Pid)
	_, ok = Lookup(pid, start+1)
	assert.False(t, ok, "another start time is another process")

	// A Member of another start time must never be signalled: the pid is
	// taken to name a process that reused it.
	require.NoError(t, Member{Pid: pid, start: start + 1}.Signal(syscall.SIGKILL))
	_, ok = Lookup(pid, start)
	assert.True(t, ok, "still alive")

	require.NoError(t, m.Signal(syscall.SIGKILL))
	cmd.Wait()
	_, ok = Lookup(pid, start)
	assert.False(t, ok)
	_, err = StartTime(pid)
	assert.Error(t, err)
	_, err = StartTime(0)
	assert.Error(t, err)
}

func TestBootID(t *testing.T) {
	id, err := BootID()
	require.NoError(t, err)
	again, err := BootID()
	require.NoError(t, err)
	assert.Equal(t, id, again)
	assert.Len(t, id, 36)
}
