//go:build linux

package remote

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/runner"
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
)

// The lease of the tests that freeze a runner: long enough that a third
// of it leaves room on a loaded machine for what the tests measure, with
// a small margin.
const (
	freezeLease  = 3 * time.Second
	freezeMargin = 150 * time.Millisecond
)

// playRunner is a runner daemon in a process of its own, as graft runner
// is, for the tests that freeze it with SIGSTOP: on the state dir args[0],
// serving on args[1] (tcp://HOST:PORT) with testToken, with the lease
// args[2] and the grace args[3], until SIGTERM. It prints "ready" once it
// listens, or why it cannot.
func playRunner(role string, args []string) bool {
	if role != "runner" {
		return false
	}
	lease, _ := time.ParseDuration(args[2])
	grace, _ := time.ParseDuration(args[3])
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r, err := runner.Open(args[0], runner.Options{Lease: lease, Grace: grace, Token: testToken, Logger: log})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	ln, err := runner.ListenConfig{Addr: args[1], Token: testToken}.Listen()
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := r.Serve(ctx, ln, args[1], nil); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
	return true
}

// runnerProc is a runner in a process of its own (playRunner).
type runnerProc struct {
	cmd  *exec.Cmd
	addr string // tcp://HOST:PORT
	log  *runtimetest.Recorder
	done chan struct{}
}

// startRunnerProc starts a runner process with lease and waits until it
// listens. The test's end resumes it (should it be frozen), stops it with
// SIGTERM, and kills it if it does not end.
func startRunnerProc(t *testing.T, lease time.Duration) *runnerProc {
	t.Helper()
	addr := "tcp://" + testsupport.FreeAddr(t)
	cmd := exec.Command(os.Args[0], t.TempDir(), addr, lease.String(), grace.String())
	cmd.Env = append(os.Environ(), helperEnv+"=runner", "GORACE=atexit_sleep_ms=0")
	rp := &runnerProc{cmd: cmd, addr: addr, log: runtimetest.NewRecorder(), done: make(chan struct{})}
	cmd.Stderr = rp.log
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start(), "start a runner process")
	lines := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		lines <- l
		io.Copy(io.Discard, out)
		cmd.Wait()
		close(rp.done)
	}()
	t.Cleanup(func() { rp.stop(t) })
	select {
	case l := <-lines:
		require.Equal(t, "ready\n", l, "runner: %s", rp.log)
	case <-time.After(15 * time.Second):
		t.Fatalf("the runner process did not start: %s", rp.log)
	}
	return rp
}

func (rp *runnerProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, rp.cmd.Process.Signal(sig))
}

// stop resumes the runner, asks it to stop, and kills it if it does not.
func (rp *runnerProc) stop(t *testing.T) {
	rp.cmd.Process.Signal(syscall.SIGCONT)
	rp.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-rp.done:
	case <-time.After(15 * time.Second):
		rp.cmd.Process.Kill()
		<-rp.done
		t.Error("the runner ignored SIGTERM")
	}
	if t.Failed() {
		t.Logf("--- runner ---\n%s", rp.log)
	}
}

// nextRenewal waits until the runner takes a renewal of session id (its
// expiry moves) and returns when it saw it.
func nextRenewal(t *testing.T, addr, id string, within time.Duration) time.Time {
	t.Helper()
	expires := func() time.Time {
		for _, s := range runnerStatus(t, addr).Sessions {
			if s.Session == id {
				return s.Expires
			}
		}
		t.Fatalf("the runner has no session %s", id)
		return time.Time{}
	}
	was := expires()
	deadline := time.Now().Add(within)
	for expires().Equal(was) {
		require.True(t, time.Now().Before(deadline), "no renewal within %s", within)
		time.Sleep(2 * time.Millisecond)
	}
	return time.Now()
}

// freezeRig is a plugin under a Supervisor on a runner process, with a
// lease of freezeLease.
type freezeRig struct {
	rp  *runnerProc
	r   *Remote
	sup *runtime.Supervisor
	log *runtimetest.Recorder // the Remote's log
}

func newFreezeRig(t *testing.T) *freezeRig {
	t.Helper()
	rig := &freezeRig{rp: startRunnerProc(t, freezeLease), log: runtimetest.NewRecorder()}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(rig.log, testWriter{t}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	var err error
	rig.r, err = New(Config{Address: rig.rp.addr, Token: testToken, Lease: freezeLease, Margin: freezeMargin,
		ShutdownTimeout: shutdown, Logger: log, Holder: t.Name()})
	require.NoError(t, err)
	out := runtimetest.NewRecorder()
	rig.sup = runtime.NewSupervisor(rig.r, runtime.Request{Project: "shop", Output: out}.For(helper("api", "cooperative")))
	require.NoError(t, rig.sup.Start(context.Background()))
	require.True(t, out.WaitFor("ready", 10*time.Second))
	return rig
}

// close stops the plugin and the placement (the runner process is
// stopped by the test's cleanup, after).
func (rig *freezeRig) close() {
	rig.rp.cmd.Process.Signal(syscall.SIGCONT) // should the test have failed while it was frozen
	rig.sup.Stop(context.Background())
	rig.r.Close()
}

// session is the live session's id and context.
func (rig *freezeRig) session(t *testing.T) *session {
	t.Helper()
	rig.r.mu.Lock()
	defer rig.r.mu.Unlock()
	require.NotNil(t, rig.r.sess)
	return rig.r.sess
}

// TestSlowRenewalRetried freezes the runner (SIGSTOP) just before a
// renewal is due, for one and a half renewal periods, so that the renewal
// goes unanswered for longer than a period (all it was given before the
// session was lost); then resumes it (SIGCONT).
// The renewal is retried while the lease holds: the session survives, and
// the plugin stays running, the same process, and is renewed on.
func TestSlowRenewalRetried(t *testing.T) {
	rig := newFreezeRig(t)
	defer rig.close()
	every := freezeLease / 3
	before := rig.sup.State()
	require.Equal(t, runtime.Running, before.Status)
	s := rig.session(t)

	// Frozen a fifth of a period before the next renewal is due (a period
	// after the last one the runner took), until half a period after the
	// one after that: the renewal's first attempt, given a period to
	// answer before, went unanswered.
	renewed := nextRenewal(t, rig.rp.addr, s.id, 2*every)
	time.Sleep(time.Until(renewed.Add(every - every/5)))
	rig.rp.signal(t, syscall.SIGSTOP)
	frozen := time.Now()
	time.Sleep(every * 3 / 2)
	rig.rp.signal(t, syscall.SIGCONT)
	resumed := time.Now()
	t.Logf("frozen %s after the last renewal the runner took, for %s (lease %s, margin %s)",
		frozen.Sub(renewed).Round(time.Millisecond), resumed.Sub(frozen).Round(time.Millisecond), freezeLease, freezeMargin)

	// Two periods on, nothing was lost, and the lease is renewed on.
	for time.Since(resumed) < 2*every {
		st := rig.sup.State()
		require.Equal(t, runtime.Running, st.Status, "last error: %s", st.LastError)
		time.Sleep(20 * time.Millisecond)
	}
	st := rig.sup.State()
	assert.Equal(t, before.Identity, st.Identity)
	assert.Equal(t, before.PID, st.PID)
	assert.Same(t, s, rig.session(t), "the same session")
	assert.NoError(t, s.ctx.Err())
	status := runnerStatus(t, rig.rp.addr)
	require.Len(t, status.Sessions, 1)
	assert.Equal(t, s.id, status.Sessions[0].Session)
	assert.True(t, status.Sessions[0].Expires.After(resumed.Add(freezeLease)), "renewed after the freeze: expires %s", status.Sessions[0].Expires)
	require.Len(t, status.Instances, 1)
	assert.Equal(t, runnerapi.InstanceStatus{Instance: "shop.api", Generation: before.Identity.Generation, PID: before.PID,
		Session: s.id, Status: runnerapi.StatusRunning, StartedAt: status.Instances[0].StartedAt}, status.Instances[0])
	assert.Contains(t, rig.log.String(), "renewal unanswered: retrying", "the freeze held a renewal up")
	assert.NotContains(t, rig.log.String(), "session with the runner lost")
}

// TestFrozenPastLeaseLost freezes the runner for longer than the lease:
// the renewals' retries run out within the lease, and the session is lost
// as before: the plugin is unconfirmed (it may still run); resumed, the
// runner finds the lease run out and stops it, and a stop confirms it.
func TestFrozenPastLeaseLost(t *testing.T) {
	rig := newFreezeRig(t)
	defer rig.close()
	every := freezeLease / 3
	before := rig.sup.State()
	require.Equal(t, runtime.Running, before.Status)

	rig.rp.signal(t, syscall.SIGSTOP)
	frozen := time.Now()
	for rig.sup.State().Status == runtime.Running {
		require.Less(t, time.Since(frozen), freezeLease+5*time.Second, "the session was not lost")
		time.Sleep(10 * time.Millisecond)
	}
	lost := time.Since(frozen)
	st := rig.sup.State()
	t.Logf("lost %s after the freeze (lease %s, margin %s): %s", lost.Round(time.Millisecond), freezeLease, freezeMargin, st.LastError)
	assert.Equal(t, runtime.StopUnconfirmed, st.Status)
	assert.Contains(t, st.LastError, "RemoteError")
	assert.Equal(t, before.Identity, st.Identity)
	assert.Greater(t, lost, every, "not at the first renewal that went unanswered")

	// Resumed past the lease: the runner stops the plugin, and the stop
	// of the unconfirmed plugin, through a new session, confirms it.
	time.Sleep(time.Until(frozen.Add(freezeLease + every)))
	rig.rp.signal(t, syscall.SIGCONT)
	require.Eventually(t, func() bool { return runtimetest.Gone(before.PID) }, grace+5*time.Second, 10*time.Millisecond)
	outcome, err := rig.sup.Stop(context.Background())
	assert.Equal(t, runtime.Killed, outcome, "err: %v", err)
	assert.Contains(t, rig.rp.log.String(), "lease ran out")
}

// TestCadence: the numbers docs/runner-api.md ("Renewals") gives, for the
// default lease and margin, and for a margin larger than a third of the
// lease.
func TestCadence(t *testing.T) {
	assert.Equal(t, cadence{lease: 15 * time.Second, margin: 5 * time.Second, every: 5 * time.Second, hold: 10 * time.Second,
		slow: 2500 * time.Millisecond, pause: 312500 * time.Microsecond, most: 1250 * time.Millisecond},
		newCadence(runnerapi.DefaultLease, 5*time.Second))
	c := newCadence(3*time.Second, 5*time.Second)
	assert.Equal(t, time.Second, c.margin, "at most a third of the lease")
	assert.Equal(t, 2*time.Second, c.hold)
	assert.Equal(t, 2850*time.Millisecond, newCadence(freezeLease, freezeMargin).hold)
}
