//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/graftland/graft/internal/testprog"
)

// On a terminal an apply keeps its live line (redrawn with \r\x1b[K) even
// with --color never: the live view follows the terminal, colour follows
// --color. (colorpipe.txtar has the other half: no live line on a pipe,
// even with --color always.)
func TestLiveLineOnTerminalWithoutColour(t *testing.T) {
	dir := t.TempDir()
	t.Cleanup(func() { cleanup(dir) })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(`name: shop
plugins:
  slow:
    command: [plug, serve, slow]
    ready: {exec: [plug, sleep, 600ms], timeout: 20 seconds}
`), 0o644))
	master, slave := openPTY(t)
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		io.Copy(&out, master) // ends with EIO once no one holds the slave
		close(read)
	}()
	cmd := exec.Command("graft", "--color", "never", "apply")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, slave, slave
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0", "GRAFT_TEST_RUN="+dir, "TERM=xterm")
	err := cmd.Run()
	slave.Close()
	select {
	case <-read:
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal's output does not end")
	}
	require.NoError(t, err, out.String())
	assert.Contains(t, out.String(), "\r\x1b[K", "no live line on a terminal")
	assert.Contains(t, out.String(), "Apply complete")
	assert.NotContains(t, out.String(), "\x1b[3", "colour despite --color never")

	down := exec.Command("graft", "down")
	down.Dir = dir
	down.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0", "GRAFT_TEST_RUN="+dir)
	b, err := down.CombinedOutput()
	require.NoError(t, err, string(b))
}

// openPTY opens a pseudo-terminal; the test's end closes its master.
func openPTY(t *testing.T) (master, slave *os.File) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		testprog.Unavailable(t, fmt.Sprintf("no pseudo-terminal here: %v", err))
	}
	t.Cleanup(func() { m.Close() })
	var n int
	rc, err := m.SyscallConn()
	require.NoError(t, err)
	require.NoError(t, rc.Control(func(fd uintptr) {
		if err = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); err == nil {
			n, err = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
		}
	}))
	require.NoError(t, err)
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	return m, s
}
