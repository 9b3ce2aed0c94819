package proc

import (
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestReadProc: a /proc file reads whole, short or longer than the first
// read (this process's maps), as os.ReadFile reads it; a missing one is
// fs.ErrNotExist.
func TestReadProc(t *testing.T) {
	for _, path := range []string{"/proc/self/stat", "/proc/self/maps"} {
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		got, err := readProc(path)
		require.NoError(t, err)
		if path == "/proc/self/maps" {
			require.Greater(t, len(got), 512, "longer than the first read")
			// Both reads list the same mappings, give or take what the
			// runtime mapped in between: compare the start only.
			want, got = want[:512], got[:512]
		}
		if path == "/proc/self/stat" {
			// Times move between two reads: compare the pid and name.
			want, got = want[:20], got[:20]
		}
		assert.Equal(t, string(want), string(got), path)
	}
	_, err := readProc("/proc/self/no-such-file")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

// TestPidOfPidfd: the pid of a pidfd, by its ioctl where the kernel has
// it, is the pid its fdinfo names, and the child's; a zombie's too.
func TestPidOfPidfd(t *testing.T) {
	pidfd := -1
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{PidFD: &pidfd}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	defer unix.Close(pidfd)
	got, err := pidOfPidfd(pidfd)
	require.NoError(t, err)
	assert.Equal(t, cmd.Process.Pid, got)
	fromInfo, err := pidfdPid(pidfd)
	require.NoError(t, err)
	assert.Equal(t, cmd.Process.Pid, fromInfo)

	// A zombie still has its pid: a plugin that exits at once has, when
	// the host reads it after the init's answer.
	require.NoError(t, unix.PidfdSendSignal(pidfd, syscall.SIGKILL, nil, 0))
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	_, err = unix.Poll(fds, 5000)
	require.NoError(t, err)
	require.NotZero(t, fds[0].Revents&unix.POLLIN, "terminated")
	got, err = pidOfPidfd(pidfd)
	require.NoError(t, err)
	assert.Equal(t, cmd.Process.Pid, got, "a zombie's")
}
