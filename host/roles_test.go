//go:build linux

package host

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
)

// roleEnv names the role the test binary plays when run again by a test.
const roleEnv = "HOST_TEST_ROLE"

func runRole(role string) {
	switch role {
	case "hostlog":
		hostLogMain()
	case "tmpfs-host":
		tmpfsHostMain()
	default:
		fmt.Fprintln(os.Stderr, "unknown role", role)
		os.Exit(2)
	}
	os.Exit(0)
}

// hostLogMain opens HOST_TEST_DIR's host.log as a background host does,
// rotated at 4 KiB, logs 300 lines into it, prints to its stdout, and
// panics.
func hostLogMain() {
	l, err := openHostLog(os.Getenv("HOST_TEST_DIR"), 4096)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	log := slog.New(slog.NewTextHandler(l, nil))
	for i := range 300 {
		log.Info("a line of the host's log", "i", i)
	}
	fmt.Println("printed to stdout")
	panic("the host's own panic")
}

// tmpfsHostMain mounts a tmpfs of HOST_TEST_TMPFS bytes on HOST_TEST_DIR,
// in this process's own mount namespace, and runs hosts on it as told on
// stdin, one line at a time: "open" opens a host there, serves it and
// brings back its last applied spec, then prints "ready" and the
// reapply's error, if any; "close" shuts it down and prints "closed". It
// exits at the end of stdin.
func tmpfsHostMain() {
	dir := os.Getenv("HOST_TEST_DIR")
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+os.Getenv("HOST_TEST_TMPFS")+",mode=0700"); err != nil {
		fmt.Println("mount:", err)
		os.Exit(1)
	}
	var (
		h      *Host
		cancel context.CancelFunc
		served chan error
	)
	stop := func() {
		cancel()
		<-served
		h.Shutdown(context.Background())
		h = nil
	}
	opt := Options{
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Timing: runtime.Timing{ShutdownTimeout: time.Second, ExitWindow: 100 * time.Millisecond, KillAfter: 100 * time.Millisecond},
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "open":
			var err error
			if h, err = Open(dir, opt); err != nil {
				fmt.Println("open:", err)
				continue
			}
			reapply := h.BeginReapply()
			ctx, end := context.WithCancel(context.Background())
			cancel = end
			served = make(chan error, 1)
			listening := make(chan struct{})
			go func() { served <- h.Serve(ctx, func() { close(listening) }) }()
			<-listening
			fmt.Println("ready", reapply(ctx))
		case "close":
			stop()
			fmt.Println("closed")
		}
	}
	if h != nil {
		stop()
	}
}

// child is the test binary run again in a role.
type child struct {
	cmd   *exec.Cmd
	in    *os.File // its stdin
	out   *bufio.Reader
	log   *runtimetest.Recorder // its stderr
	done  chan struct{}
	state string // the state dir, as this process reaches it
}

// startChild runs the test binary again as role, with env, in a mount
// namespace of its own (in a user namespace first when not root, in which
// it may mount).
func startChild(t *testing.T, role string, env ...string) *child {
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
	c := &child{cmd: cmd, log: runtimetest.NewRecorder(), done: make(chan struct{})}
	cmd.Stderr = c.log
	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdin = r
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	c.in, c.out = w, bufio.NewReader(out)
	require.NoError(t, cmd.Start())
	r.Close()
	go func() { cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		c.in.Close() // a host ends at the end of its stdin
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-c.done
			t.Errorf("the child did not end: %s", c.log)
		}
	})
	return c
}

// say writes a command on the child's stdin and returns the line it
// prints back.
func (c *child) say(t *testing.T, cmd string) string {
	t.Helper()
	_, err := fmt.Fprintln(c.in, cmd)
	require.NoError(t, err)
	line := make(chan string, 1)
	go func() {
		l, _ := c.out.ReadString('\n')
		line <- strings.TrimSpace(l)
	}()
	select {
	case l := <-line:
		return l
	case <-time.After(60 * time.Second):
		t.Fatalf("no answer to %s: %s", cmd, c.log)
		return ""
	}
}
