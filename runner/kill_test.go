//go:build linux

package runner

import (
	"bufio"
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
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime/runtimetest"
)

// daemon is a runner in a process of its own, as graft runner is, for
// tests that kill it with SIGKILL.
type daemon struct {
	*client
	cmd  *exec.Cmd
	log  *runtimetest.Recorder
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
	d := &daemon{cmd: cmd, log: runtimetest.NewRecorder(), done: make(chan struct{})}
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
	s := proc.NewSpawner()
	iso := s.Isolation()
	s.Close()
	testsupport.NeedNamespace(t, iso.Err)
	kill9(t, false)
}

// TestKill9WithoutNamespace: the same without PID namespaces, where they
// cannot be made: the escaped grandchild outlives the runner, and the
// next runner stops it, found by the invocation id in its environment,
// before its instance starts again.
func TestKill9WithoutNamespace(t *testing.T) { kill9(t, true) }

func kill9(t *testing.T, noNamespace bool) {
	k := &kill9Run{t: t, dir: t.TempDir(), handed: map[string]int64{}}
	stopWatch := overlapWatch(t)
	defer stopWatch()
	if noNamespace {
		k.env = append(k.env, noNamespaceEnv+"=1")
		k.noNamespace = true
	}

	d := k.launch(300 * time.Millisecond)
	c := k.catch(d)
	killed := time.Now()
	d.kill()
	c.ev.close()
	assert.Error(t, <-c.stopAnswered)
	assert.Error(t, <-c.startAnswered)
	if noNamespace {
		testsupport.WaitGone(t, 5*time.Second, c.idle.PID, c.stubborn.PID, c.starting.PID, c.escapes.PID)
		require.True(t, alive(c.escaped), "the escaped grandchild outlived the runner")
	} else {
		testsupport.WaitGone(t, 2500*time.Millisecond, c.idle.PID, c.stubborn.PID, c.starting.PID, c.escapes.PID, c.escaped)
		t.Logf("every process was gone %s after the kill", time.Since(killed).Round(time.Millisecond))
	}

	d = k.launch(time.Second)
	k.recovered(d, c.escaped, noNamespace)
	d.kill()
}

// kill9Run is one run of kill9: the state dir and the environment of its
// runners, and the last generation handed out of each instance.
type kill9Run struct {
	t      *testing.T
	dir    string
	env    []string
	handed map[string]int64
	// noNamespace: its runners start processes without PID namespaces.
	noNamespace bool
}

// take records the generation of st, which must be larger than any
// handed out of its instance before.
func (k *kill9Run) take(st runnerapi.Started) {
	k.t.Helper()
	require.Greater(k.t, st.Generation, k.handed[st.Instance], "generations only grow")
	k.handed[st.Instance] = st.Generation
}

// launch starts a runner daemon of the run, with grace, and waits until
// it serves.
func (k *kill9Run) launch(grace time.Duration) *daemon {
	k.t.Helper()
	d, line := launchDaemon(k.t, k.dir, filepath.Join(k.dir, "r.sock"), grace, nil, k.env...)
	require.Equal(k.t, "ready\n", line, "log: %s", d.log)
	return d
}

// caught is what a runner is doing when kill9 kills it: a process idle,
// one in the graceful window of its stop, one in its ready check (known
// by its record, with its pid), and one whose grandchild left for a
// session of its own; with the events of their session and the answers
// of the stop and of the start under way.
type caught struct {
	idle, stubborn, escapes runnerapi.Started
	starting                record
	escaped                 int // the grandchild's pid
	ev                      *events
	stopAnswered            chan error
	startAnswered           chan error
}

// catch brings the runner d into every situation of caught.
func (k *kill9Run) catch(d *daemon) caught {
	t := k.t
	sess := d.open(0)
	c := caught{ev: d.events(sess), stopAnswered: make(chan error, 1), startAnswered: make(chan error, 1)}

	// Idle.
	c.idle = d.start("k.idle", plugin(t, sess, "cooperative"))
	k.take(c.idle)
	c.ev.ready(t)
	// Mid-stop: a stubborn process in its graceful window.
	c.stubborn = d.start("k.stop", plugin(t, sess, "stubborn"))
	k.take(c.stubborn)
	c.ev.ready(t)
	go func() {
		_, _, err := d.try("POST", "/v1/instances/k.stop/stop", runnerapi.Stop{Session: sess, Generation: c.stubborn.Generation, ShutdownTimeoutMillis: 30000}, nil)
		c.stopAnswered <- err
	}()
	c.ev.until(t, 5*time.Second, func(e runnerapi.Event) bool { return e.Instance == "k.stop" && e.Line == "got terminated" })
	c.starting = k.midStart(d, sess, c)
	// Escaped: a grandchild in a session of its own, which no
	// parent-death signal reaches.
	c.escapes = d.start("k.escaped", plugin(t, sess, "daemon"))
	k.take(c.escapes)
	evs := c.ev.until(t, 5*time.Second, func(e runnerapi.Event) bool { return strings.HasPrefix(e.Line, "daemon ") })
	c.escaped = atoi(t, strings.TrimPrefix(evs[len(evs)-1].Line, "daemon "))
	require.True(t, alive(c.escaped), "the escaped grandchild runs")
	return c
}

// midStart starts a process whose ready check will not pass soon, and
// returns its record once the runner wrote its pid in it; in a PID
// namespace, where the runner writes no pid (the namespace dies with it),
// the record as its start left it, with the pid found by its invocation
// id.
func (k *kill9Run) midStart(d *daemon, sess string, c caught) record {
	t := k.t
	addr := testsupport.FreeAddr(t)
	slow := plugin(t, sess, "listen", "1h", addr)
	slow.Ready = &launch.Ready{Probe: launch.Probe{TCP: addr}, Timeout: launch.Duration(60000 * time.Millisecond)}
	go func() {
		_, _, err := d.try("POST", "/v1/instances/k.start/start", slow, nil)
		c.startAnswered <- err
	}()
	c.ev.until(t, 5*time.Second, func(e runnerapi.Event) bool { return e.Instance == "k.start" && strings.HasPrefix(e.Line, "waiting") })
	// The ready check cannot pass for a minute: a record with the pid
	// was written before it did. (The plugin may say "waiting" before
	// the runner has written it.)
	var rec record
	running := 0
	require.Eventually(t, func() bool {
		rp := newReplay()
		err := readJournal(journalPath(k.dir), rp)
		rec = rp.live["k.start"]
		if err != nil || rec.Invocation == "" {
			return false
		}
		if k.noNamespace {
			return rec.PID != 0
		}
		ms, err := proc.Marked([]string{EnvInvocation + "=" + rec.Invocation})
		if err != nil || len(ms) != 1 {
			return false
		}
		running = ms[0].Pid
		return true
	}, 5*time.Second, 10*time.Millisecond, "the process is recorded before the ready check")
	if !k.noNamespace {
		assert.Zero(t, rec.PID, "no pid is recorded of a process in the runner's namespace")
		rec.PID = running
	}
	k.handed["k.start"] = rec.Generation
	return rec
}

// recovered checks the runner d, started after the kill: every instance
// starts again with the next generation, the escaped grandchild's only
// once the recovery has stopped it, and the log says whether anything of
// the killed runner's processes was left.
func (k *kill9Run) recovered(d *daemon, escaped int, noNamespace bool) {
	t := k.t
	sess := d.open(0)
	// The next runner's recovery stops the escaped grandchild in the
	// background: a start of its instance is refused until it has, and
	// once it has, the grandchild is gone.
	startEscaped := func() bool {
		st, status, e := d.tryStart("k.escaped", plugin(t, sess, "cooperative"))
		switch status {
		case http.StatusOK:
			assert.False(t, alive(escaped), "stopped before its instance started again")
			k.take(st)
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
		k.take(d.start(name, plugin(t, sess, "cooperative")))
	}
	if !started {
		require.Eventually(t, startEscaped, 15*time.Second, 20*time.Millisecond)
	}
	assert.False(t, alive(escaped), "stopped before its instance started again")
	if noNamespace {
		assert.True(t, d.log.WaitFor("a recorded process may still run", 5*time.Second), "logged: %s", d.log)
	} else {
		assert.NotContains(t, d.log.String(), "a recorded process may still run", "nothing was left")
		assert.True(t, d.log.WaitFor("a recorded process is gone", 5*time.Second), "logged: %s", d.log)
	}
	for name, gen := range k.handed {
		assert.Equal(t, int64(2), gen, name)
	}
}
