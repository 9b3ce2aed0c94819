//go:build linux

package runner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/graftland/graft/runnerapi"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/testprog"
	"github.com/graftland/graft/placement/placementtest"
)

// daemon is a runner in a process of its own, as graft runner is, for
// tests that kill it with SIGKILL.
type daemon struct {
	*client
	cmd  *exec.Cmd
	log  *placementtest.Recorder
	done chan struct{}
}

// startDaemon starts a runner daemon on dir and waits until it serves.
func startDaemon(t *testing.T, dir string, grace time.Duration) *daemon {
	t.Helper()
	d, line := launchDaemon(t, dir, filepath.Join(dir, "r.sock"), grace, nil)
	require.Equal(t, "ready\n", line, "log: %s", d.log)
	return d
}

// launchDaemon starts a runner daemon on dir serving on sock, with extra
// environment and process attributes, and returns it with the first line
// it printed: "ready" once it serves, else why it could not.
func launchDaemon(t *testing.T, dir, sock string, grace time.Duration, attr *syscall.SysProcAttr, env ...string) (*daemon, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"=runner", "RUNNER_TEST_DIR="+dir, "RUNNER_TEST_SOCK="+sock,
		"RUNNER_TEST_GRACE="+grace.String(), "GORACE=atexit_sleep_ms=0")
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = attr
	d := &daemon{cmd: cmd, log: placementtest.NewRecorder(), done: make(chan struct{})}
	cmd.Stderr = d.log
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start(), "start a runner daemon")
	go func() { cmd.Wait(); close(d.done) }()
	t.Cleanup(d.kill)
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		d.client = unixClient(t, sock)
		return d, l
	case <-time.After(10 * time.Second):
		t.Fatalf("the runner daemon did not start: %s", d.log)
		return nil, ""
	}
}

// kill kills the daemon with SIGKILL and waits for it.
func (d *daemon) kill() {
	d.cmd.Process.Kill()
	<-d.done
	d.hc.CloseIdleConnections()
}

// TestKill9: a runner killed with SIGKILL, while idle, in the middle of a
// start (its ready check) or in the middle of a stop (the graceful window
// of a process that ignores it), and started again: generations never
// repeat, two generations of an instance never live at once, and nothing
// of its processes outlives it by 2 seconds, not even a grandchild that
// left for a session of its own: each process runs in a PID namespace of
// its own, which the kernel kills when the runner dies. The next runner
// finds its records, and nothing left of them.
func TestKill9(t *testing.T) {
	needNamespace(t)
	kill9(t, false)
}

// TestKill9WithoutNamespace: the same without PID namespaces, where they
// cannot be made: the escaped grandchild outlives the runner, and the
// next runner stops it, found by the invocation id in its environment,
// before its instance starts again.
func TestKill9WithoutNamespace(t *testing.T) { kill9(t, true) }

func kill9(t *testing.T, noNamespace bool) {
	dir := t.TempDir()
	stopWatch := overlapWatch(t)
	defer stopWatch()
	handed := map[string]int64{} // the last generation of each instance
	take := func(st runnerapi.Started) {
		t.Helper()
		require.Greater(t, st.Generation, handed[st.Instance], "generations only grow")
		handed[st.Instance] = st.Generation
	}
	var env []string
	if noNamespace {
		env = append(env, noNamespaceEnv+"=1")
	}
	start := func(grace time.Duration) *daemon {
		d, line := launchDaemon(t, dir, filepath.Join(dir, "r.sock"), grace, nil, env...)
		require.Equal(t, "ready\n", line, "log: %s", d.log)
		return d
	}

	d := start(300 * time.Millisecond)
	sess := d.open(0)
	ev := d.events(sess)

	// Idle.
	st := d.start("k.idle", plugin(t, sess, "cooperative"))
	take(st)
	ev.ready(t)
	// Mid-stop: a stubborn process in its graceful window.
	stub := d.start("k.stop", plugin(t, sess, "stubborn"))
	take(stub)
	ev.ready(t)
	stopAnswered := make(chan error, 1)
	go func() {
		_, _, err := d.try("POST", "/v1/instances/k.stop/stop", runnerapi.Stop{Session: sess, Generation: stub.Generation, ShutdownTimeoutMillis: 30000}, nil)
		stopAnswered <- err
	}()
	ev.until(t, 5*time.Second, func(e runnerapi.Event) bool { return e.Instance == "k.stop" && e.Line == "got terminated" })
	// Mid-start: waiting for a ready check that will not pass soon.
	addr := freeAddr(t)
	slow := plugin(t, sess, "listen", "1h", addr)
	slow.Ready = &runnerapi.Ready{TCP: addr, TimeoutMillis: 60000}
	startAnswered := make(chan error, 1)
	go func() {
		_, _, err := d.try("POST", "/v1/instances/k.start/start", slow, nil)
		startAnswered <- err
	}()
	ev.until(t, 5*time.Second, func(e runnerapi.Event) bool { return e.Instance == "k.start" && strings.HasPrefix(e.Line, "waiting") })
	// The ready check cannot pass for a minute: a record with the pid
	// was written before it did. (The plugin may say "waiting" before
	// the runner has written it.)
	var rec record
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "records", "k.start.json"))
		return err == nil && json.Unmarshal(b, &rec) == nil && rec.PID != 0
	}, 5*time.Second, 10*time.Millisecond, "the pid is recorded before the ready check")
	handed["k.start"] = rec.Generation
	// Escaped: a grandchild in a session of its own, which no
	// parent-death signal reaches.
	esc := d.start("k.escaped", plugin(t, sess, "daemon"))
	take(esc)
	evs := ev.until(t, 5*time.Second, func(e runnerapi.Event) bool { return strings.HasPrefix(e.Line, "daemon ") })
	escaped := atoi(t, strings.TrimPrefix(evs[len(evs)-1].Line, "daemon "))
	require.True(t, alive(escaped), "the escaped grandchild runs")

	killed := time.Now()
	d.kill()
	ev.close()
	assert.Error(t, <-stopAnswered)
	assert.Error(t, <-startAnswered)
	if noNamespace {
		waitGone(t, 5*time.Second, st.PID, stub.PID, rec.PID, esc.PID)
		require.True(t, alive(escaped), "the escaped grandchild outlived the runner")
	} else {
		waitGone(t, 2500*time.Millisecond, st.PID, stub.PID, rec.PID, esc.PID, escaped)
		t.Logf("every process was gone %s after the kill", time.Since(killed).Round(time.Millisecond))
	}

	d = start(time.Second)
	sess = d.open(0)
	// The next runner's recovery stops the escaped grandchild in the
	// background: a start of its instance is refused until it has, and
	// once it has, the grandchild is gone.
	startEscaped := func() bool {
		st, status, e := d.tryStart("k.escaped", plugin(t, sess, "cooperative"))
		switch status {
		case http.StatusOK:
			assert.False(t, alive(escaped), "stopped before its instance started again")
			take(st)
			return true
		case http.StatusConflict:
			assert.Equal(t, runnerapi.KindUnconfirmed, e.Kind, "%+v", e)
		default:
			t.Errorf("start of k.escaped: %d %+v", status, e)
		}
		return false
	}
	started := startEscaped()
	for _, name := range []string{"k.idle", "k.stop", "k.start"} {
		take(d.start(name, plugin(t, sess, "cooperative")))
	}
	if !started {
		require.Eventually(t, startEscaped, 15*time.Second, 20*time.Millisecond)
	}
	assert.False(t, alive(escaped), "stopped before its instance started again")
	if noNamespace {
		assert.Contains(t, d.log.String(), "a recorded process may still run")
	} else {
		assert.NotContains(t, d.log.String(), "a recorded process may still run", "nothing was left")
		assert.Contains(t, d.log.String(), "a recorded process is gone")
	}
	for name, gen := range handed {
		assert.Equal(t, int64(2), gen, name)
	}
	d.kill()
}

// needNamespace skips a test where this process cannot make PID
// namespaces, unless GRAFT_TEST_REQUIRE_ALL=1 makes that a failure; as
// root it always can.
func needNamespace(t *testing.T) {
	t.Helper()
	s := proc.NewSpawner()
	iso := s.Isolation()
	s.Close()
	switch {
	case iso.Namespace:
	case os.Geteuid() == 0 || testprog.RequireAll():
		t.Fatalf("processes get no PID namespace: %v", iso.Err)
	default:
		testprog.Unavailable(t, fmt.Sprintf("processes get no PID namespace here (%v); as root this test runs", iso.Err))
	}
}
