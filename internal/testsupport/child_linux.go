package testsupport

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/runtime/runtimetest"
)

// Child is the test binary run again in a role, in a mount namespace of
// its own, told what to do one line at a time on its stdin.
type Child struct {
	Cmd  *exec.Cmd
	In   *os.File // its stdin
	Out  *bufio.Reader
	Log  *runtimetest.Recorder // its stderr
	Done chan struct{}         // closed once it exited
	// State is where its state dir is, as the test reaches it: through
	// /proc/PID/root, into its mount namespace.
	State string
}

// StartChild runs the test binary again with roleEnv=role and env, in a
// mount namespace of its own (in a user namespace first when not root, in
// which it may mount). It ends at the end of its stdin, when the test
// ends, or is killed 30 seconds after.
func StartChild(t *testing.T, roleEnv, role string, env ...string) *Child {
	t.Helper()
	attr := &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	if uid, gid := os.Geteuid(), os.Getegid(); uid != 0 {
		attr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
		}
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append([]string{roleEnv + "=" + role, "GORACE=atexit_sleep_ms=0"}, env...)...)
	cmd.SysProcAttr = attr
	c := &Child{Cmd: cmd, Log: runtimetest.NewRecorder(), Done: make(chan struct{})}
	cmd.Stderr = c.Log
	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdin = r
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	c.In, c.Out = w, bufio.NewReader(out)
	require.NoError(t, cmd.Start())
	r.Close()
	go func() { cmd.Wait(); close(c.Done) }()
	t.Cleanup(func() {
		c.In.Close()
		select {
		case <-c.Done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-c.Done
			t.Errorf("the child did not end: %s", c.Log)
		}
	})
	return c
}

// Say writes a command on the child's stdin and returns the line it
// prints back.
func (c *Child) Say(t *testing.T, cmd string) string {
	t.Helper()
	_, err := fmt.Fprintln(c.In, cmd)
	require.NoError(t, err)
	line := make(chan string, 1)
	go func() {
		l, _ := c.Out.ReadString('\n')
		line <- strings.TrimSpace(l)
	}()
	select {
	case l := <-line:
		return l
	case <-time.After(60 * time.Second):
		t.Fatalf("no answer to %s: %s", cmd, c.Log)
		return ""
	}
}
