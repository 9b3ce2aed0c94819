//go:build linux

package remote

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/faultproxy"
	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runner"
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// The plugins of these tests are this test binary run again by the
// runner; helperEnv names what the plugin does.
const helperEnv = "GRAFT_TEST_REMOTE_HELPER"

func TestMain(m *testing.M) {
	testsupport.PlayRole(helperEnv, runtimetest.Play, playRunner)
	runtimetest.Main(m)
}

// helper is a plugin on a runner that plays one of runtimetest.Play's
// roles.
func helper(name, role string, args ...string) *spec.Plugin {
	return testsupport.RolePlugin(spec.OnRunner, name, helperEnv, role, args...)
}

// Short durations for most tests.
const (
	lease    = 900 * time.Millisecond
	grace    = 200 * time.Millisecond
	shutdown = 400 * time.Millisecond
	margin   = 500 * time.Millisecond
)

// testToken is the token of the runners of testRunner: a TCP listener
// requires one.
const testToken = "remote-test-token"

// testRunner runs a runner in this process on a loopback port, with
// testToken, for the test's life, and returns its address.
func testRunner(t *testing.T) string {
	t.Helper()
	return testRunnerWithGrace(t, grace)
}

// testRunnerWithGrace is testRunner with grace, not the tests' short one,
// from interrupting a process to killing it.
func testRunnerWithGrace(t *testing.T, grace time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(serveRunnerWithGrace(t, t.TempDir(), ln, testToken, grace))
	return "tcp://" + ln.Addr().String()
}

// serveRunner serves a runner on dir, with token, on ln until stop.
func serveRunner(t *testing.T, dir string, ln net.Listener, token string) (stop func()) {
	t.Helper()
	return serveRunnerWithGrace(t, dir, ln, token, grace)
}

// serveRunnerWithGrace is serveRunner with grace from interrupting a
// process to killing it.
func serveRunnerWithGrace(t *testing.T, dir string, ln net.Listener, token string, grace time.Duration) (stop func()) {
	t.Helper()
	return serveRunnerWith(t, dir, ln, token, grace, guard.Limits{})
}

// serveRunnerWith is serveRunnerWithGrace with lim on its listener.
func serveRunnerWith(t *testing.T, dir string, ln net.Listener, token string, grace time.Duration, lim guard.Limits) (stop func()) {
	t.Helper()
	r, err := runner.Open(dir, runner.Options{Lease: lease, Grace: grace, Token: token, Logger: testLogger(t), Limits: lim})
	require.NoError(t, err)
	srv := guard.Server(r.Handler(), lim, testLogger(t))
	ln = guard.Listener(ln, lim)
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	return func() {
		assert.NoError(t, r.Close())
		srv.Close()
		<-served
	}
}

// testLogger logs to the test, and keeps what it logged.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

func newRemote(t *testing.T, addr string, log *slog.Logger) *Remote {
	t.Helper()
	return newRemoteWithShutdown(t, addr, log, shutdown)
}

// newRemoteWithShutdown is newRemote with shutdown, not the tests' short
// one, as the bound of the graceful stop.
func newRemoteWithShutdown(t *testing.T, addr string, log *slog.Logger, shutdown time.Duration) *Remote {
	t.Helper()
	if log == nil {
		log = testLogger(t)
	}
	r, err := New(Config{Address: addr, Token: testToken, ShutdownTimeout: shutdown, Margin: margin, Logger: log, Holder: t.Name()})
	require.NoError(t, err)
	return r
}

// gone reports whether pid names no live process.

func TestConformance(t *testing.T) {
	runtimetest.Run(t, runtimetest.Kit{
		// A runner's windows: the remote's graceful stop, then the runner's
		// grace from interrupt to kill.
		New: func(t *testing.T, timing runtime.Timing) runtime.Placement {
			return newRemoteWithShutdown(t, testRunnerWithGrace(t, timing.KillAfter), nil, timing.ShutdownTimeout)
		},
		Plugin: func(t *testing.T, name string, b runtimetest.Behavior) *spec.Plugin {
			if b == runtimetest.Failing {
				return helper(name, "exit", "3", "one", "two", "three")
			}
			return helper(name, string(b))
		},
		Timing: runtime.Timing{ShutdownTimeout: shutdown, KillAfter: grace},
		// Stubborn outlives SIGTERM: the runner killed it after grace, and
		// says so.
		Forced: func(err error) bool {
			var e *runtime.RemoteForced
			return errors.As(err, &e) && e.Killed && strings.HasSuffix(e.Error(), "interrupted it (SIGTERM), then killed it after grace")
		},
		Generation: 1,
		Stable:     true,
		Gone:       func(t *testing.T, h runtime.Handle) bool { return runtimetest.Gone(h.PID()) },
	})
}

// TestTerminatedIsLogged: a confirmed stop logs "Remote execution
// terminated" at info, with remote.termination, remote.instance and
// remote.generation.
func TestTerminatedIsLogged(t *testing.T) {
	buf := runtimetest.NewRecorder()
	log := slog.New(slog.NewJSONHandler(buf, nil))
	r := newRemote(t, testRunner(t), log)
	defer r.Close()
	out := runtimetest.NewRecorder()
	h, err := r.Start(context.Background(), runtime.Request{Project: "shop", Output: out}.For(helper("api", "cooperative")))
	require.NoError(t, err)
	require.True(t, out.WaitFor("ready", 10*time.Second))
	outcome, err := h.Stop(context.Background())
	require.NoError(t, err)
	assert.Equal(t, runtime.Exited, outcome)
	assert.Contains(t, buf.String(), `"level":"INFO","msg":"Remote execution terminated","plugin":"api","remote.termination":"Exited","remote.instance":"shop.api","remote.generation":1`)
}

// TestRefusedStreamEndsItsSession: a host whose session's event stream
// the runner refuses (every stream taken) fails its start, and ends the
// session it opened at once, instead of leaving it to the runner until
// its lease runs out.
func TestRefusedStreamEndsItsSession(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(serveRunnerWith(t, t.TempDir(), ln, testToken, grace, guard.Limits{MaxConns: 8, MaxStreams: 1}))
	addr := "tcp://" + ln.Addr().String()
	first := newRemote(t, addr, nil)
	defer first.Close()
	out := runtimetest.NewRecorder()
	h, err := first.Start(context.Background(), runtime.Request{Project: "shop", Output: out}.For(helper("api", "cooperative")))
	require.NoError(t, err)
	require.True(t, out.WaitFor("ready", 10*time.Second))

	second := newRemote(t, addr, nil)
	defer second.Close()
	_, err = second.Start(context.Background(), runtime.Request{Project: "other"}.For(helper("api", "cooperative")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refused the stream")
	assert.Len(t, runnerStatus(t, addr).Sessions, 1, "the refused session is left on the runner")

	_, err = h.Stop(context.Background())
	require.NoError(t, err)
}

// TestConnectionLoss cuts the network between host and runner without
// closing anything: the handles fail with a RemoteError once a renewal
// fails; the runner stops the process when the lease runs out, not before;
// once the network is back, the next start replaces it with a larger
// generation.
func TestConnectionLoss(t *testing.T) {
	addr := testRunner(t)
	px := faultproxy.New(t, strings.TrimPrefix(addr, "tcp://"))
	r := newRemote(t, "tcp://"+px.Addr(), nil)
	defer r.Close()
	out := runtimetest.NewRecorder()
	req := runtime.Request{Project: "shop", Output: out}.For(helper("api", "cooperative"))
	h, err := r.Start(context.Background(), req)
	require.NoError(t, err)
	require.True(t, out.WaitFor("ready", 10*time.Second))
	pid := h.PID()

	cut := time.Now()
	px.Dark()
	select {
	case <-h.Done():
	case <-time.After(lease + 5*time.Second):
		t.Fatal("the handle did not fail after the network went dark")
	}
	lost := time.Since(cut)
	exit := h.Exit()
	assert.True(t, exit.Lost)
	assert.Contains(t, exit.Error, "RemoteError")
	t.Logf("handle lost %s after the cut", lost)
	assert.Less(t, lost, lease+2*time.Second)

	// The process runs on until its lease runs out on the runner, which
	// then stops it: interrupt, and kill after grace.
	for !runtimetest.Gone(pid) {
		require.Less(t, time.Since(cut), lease+grace+5*time.Second, "the runner did not stop the process after the lease")
		time.Sleep(5 * time.Millisecond)
	}
	stopped := time.Since(cut)
	t.Logf("process stopped %s after the cut (lease %s)", stopped, lease)
	assert.Greater(t, stopped, lease*2/3, "not before the lease, renewed a third of it before the cut, ran out")
	assert.Less(t, stopped, lease+grace+2*time.Second)

	// The network is back: the next start replaces it, generation 2.
	px.Light()
	h2, err := r.Start(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, runtime.Identity{ID: "shop.api", Generation: 2}, h2.Identity())
	_, err = h2.Stop(context.Background())
	require.NoError(t, err)
}

// TestStreamFollowedAgain: an event stream that breaks (its connection
// closed, as a runner that replaces its program closes it) is followed
// again: the process is not lost, and its output and exit come through
// the next stream.
func TestStreamFollowedAgain(t *testing.T) {
	addr := testRunner(t)
	px := faultproxy.New(t, strings.TrimPrefix(addr, "tcp://"))
	r := newRemote(t, "tcp://"+px.Addr(), nil)
	defer r.Close()
	out := runtimetest.NewRecorder()
	req := runtime.Request{Project: "shop", Output: out}.For(helper("api", "cooperative"))
	h, err := r.Start(context.Background(), req)
	require.NoError(t, err)
	require.True(t, out.WaitFor("ready", 10*time.Second))
	for range 3 {
		px.Cut()
		time.Sleep(lease / 2)
	}
	time.Sleep(lease)
	select {
	case <-h.Done():
		t.Fatalf("the process was lost with its stream: %+v", h.Exit())
	default:
	}
	outcome, err := h.Stop(context.Background())
	require.NoError(t, err)
	assert.Equal(t, runtime.Exited, outcome)
	assert.True(t, out.WaitFor("bye", 10*time.Second), "its output comes through the next stream")
}

// TestInFlightCallFails: a start under way when the network goes dark
// fails with a RemoteError, without retrying.
func TestInFlightCallFails(t *testing.T) {
	addr := testRunner(t)
	px := faultproxy.New(t, strings.TrimPrefix(addr, "tcp://"))
	r := newRemote(t, "tcp://"+px.Addr(), nil)
	defer r.Close()
	// Open the session first, so only the start is in flight.
	warm, err := r.Start(context.Background(), runtime.Request{Project: "shop", Output: runtimetest.NewRecorder()}.For(helper("warm", "cooperative")))
	require.NoError(t, err)
	port := testsupport.FreeAddr(t)
	p := helper("slow", "listen", "3s", port)
	p.Ready = &spec.Ready{Probe: launch.Probe{TCP: port}, Timeout: spec.FromStd(20 * time.Second)}
	errs := make(chan error, 1)
	go func() {
		_, err := r.Start(context.Background(), runtime.Request{Project: "shop", Output: runtimetest.NewRecorder()}.For(p))
		errs <- err
	}()
	time.Sleep(200 * time.Millisecond)
	px.Dark()
	select {
	case err := <-errs:
		var re *RemoteError
		require.ErrorAs(t, err, &re)
		t.Logf("in-flight start failed: %v", err)
	case <-time.After(lease + 5*time.Second):
		t.Fatal("the start in flight did not fail")
	}
	<-warm.Done()
	assert.True(t, warm.Exit().Lost)
}

// TestStopUnconfirmed: a stop the runner cannot answer (the network went
// dark) ends RemoteTerminationUnconfirmed after the graceful stop plus
// lease plus margin, with the cause in the CleanupError.
func TestStopUnconfirmed(t *testing.T) {
	addr := testRunner(t)
	px := faultproxy.New(t, strings.TrimPrefix(addr, "tcp://"))
	r := newRemote(t, "tcp://"+px.Addr(), nil)
	defer r.Close()
	out := runtimetest.NewRecorder()
	h, err := r.Start(context.Background(), runtime.Request{Project: "shop", Output: out}.For(helper("api", "cooperative")))
	require.NoError(t, err)
	require.True(t, out.WaitFor("ready", 10*time.Second))
	px.Dark()
	began := time.Now()
	outcome, err := h.Stop(context.Background())
	took := time.Since(began)
	assert.Equal(t, runtime.Unconfirmed, outcome)
	var cleanup *runtime.CleanupError
	require.ErrorAs(t, err, &cleanup)
	var unconfirmed *runtime.RemoteTerminationUnconfirmed
	require.ErrorAs(t, err, &unconfirmed)
	assert.Equal(t, "shop.api", unconfirmed.Instance)
	assert.Equal(t, int64(1), unconfirmed.Generation)
	t.Logf("unconfirmed after %s: %v", took, err)
	assert.Less(t, took, shutdown+lease+margin+2*time.Second)
	assert.Equal(t, runtime.Unconfirmed, h.Exit().Outcome)

	// Back on the network, a new stop asks the runner again, through a new
	// session; the lease ran out meanwhile and the runner stopped it, with
	// SIGTERM at once: Killed.
	px.Light()
	require.Eventually(t, func() bool { return runtimetest.Gone(h.PID()) }, lease+grace+5*time.Second, 10*time.Millisecond)
	outcome, err = h.Stop(context.Background())
	assert.Equal(t, runtime.Killed, outcome)
	var forced *runtime.RemoteForced
	require.ErrorAs(t, err, &forced)
	assert.False(t, forced.Killed, "it ended at the SIGTERM")
	assert.True(t, strings.HasSuffix(forced.Error(), "runner "+forced.Runner+" interrupted it (SIGTERM), and it ended then"), forced.Error())
	assert.NotContains(t, err.Error(), "killed it after grace")
	assert.False(t, errors.As(err, &unconfirmed), "confirmed now: %v", err)
	assert.Equal(t, runtime.Killed, h.Exit().Outcome)
	outcome, err = h.Stop(context.Background())
	assert.Equal(t, runtime.Killed, outcome, "the same answer again")
	assert.NoError(t, err)
}

// TestStartCancelled: a start whose caller gives up while its plugin is
// not ready yet returns at once; the runner stops what it started, and
// nothing is left for Close to wait for.
func TestStartCancelled(t *testing.T) {
	addr := testRunner(t)
	r := newRemote(t, addr, nil)
	port := testsupport.FreeAddr(t)
	p := helper("slow", "listen", "1h", port)
	p.Ready = &spec.Ready{Probe: launch.Probe{TCP: port}, Timeout: spec.FromStd(time.Minute)}
	out := runtimetest.NewRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := r.Start(ctx, runtime.Request{Project: "shop", Output: out}.For(p))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(began), 2*time.Second)

	require.Eventually(t, func() bool { return len(runnerStatus(t, addr).Instances) == 0 }, 3*time.Second, 10*time.Millisecond,
		"the runner stops it")
	began = time.Now()
	require.NoError(t, r.Close())
	assert.Less(t, time.Since(began), 2*time.Second)
}

// runnerStatus asks the runner at addr for its status.
func runnerStatus(t *testing.T, addr string) runnerapi.Status {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+strings.TrimPrefix(addr, "tcp://")+"/v1/status", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var st runnerapi.Status
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	return st
}

// TestStoppedHandlesAreForgotten: a session keeps no handle of a process
// whose stop was confirmed, nor what a failed start wrote.
func TestStoppedHandlesAreForgotten(t *testing.T) {
	addr := testRunner(t)
	r := newRemote(t, addr, nil)
	defer r.Close()
	for range 3 {
		out := runtimetest.NewRecorder()
		h, err := r.Start(context.Background(), runtime.Request{Project: "shop", Output: out}.For(helper("api", "cooperative")))
		require.NoError(t, err)
		require.True(t, out.WaitFor("ready", 10*time.Second))
		_, err = h.Stop(context.Background())
		require.NoError(t, err)

		p := helper("bad", "exit", "3", "it fails")
		p.Ready = &spec.Ready{Probe: launch.Probe{TCP: "127.0.0.1:1"}, Timeout: spec.FromStd(5 * time.Second)}
		_, err = r.Start(context.Background(), runtime.Request{Project: "shop", Output: runtimetest.NewRecorder()}.For(p))
		var se *runtime.StartError
		require.ErrorAs(t, err, &se)
	}
	r.mu.Lock()
	s := r.sess
	r.mu.Unlock()
	s.mu.Lock()
	failed := slices.Collect(maps.Keys(s.failed))
	s.mu.Unlock()
	require.Len(t, failed, 3, "the failed starts are remembered")
	// A failed start's line may come after the failure's answer (the
	// stream is another connection): it is dropped as well.
	s.event(runnerapi.Event{Type: runnerapi.EventOutput, Instance: failed[0].instance, Generation: failed[0].gen, Line: "late"})
	s.event(runnerapi.Event{Type: runnerapi.EventExit, Instance: failed[0].instance, Generation: failed[0].gen, Exit: &runnerapi.Exit{Code: 3}})
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Empty(t, s.handles)
	assert.Empty(t, s.earlyOut)
	assert.Empty(t, s.early)
}

// TestUpdate: a runner started again with another token; the placement
// takes the new token, stops what the old session started through a new
// session, and starts the next generation.
func TestUpdate(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	stop := serveRunner(t, dir, ln, "old-token")
	r, err := New(Config{Address: "tcp://" + addr, Token: "old-token", ShutdownTimeout: shutdown, Margin: margin, Logger: testLogger(t), Holder: t.Name()})
	require.NoError(t, err)
	defer r.Close()
	out := runtimetest.NewRecorder()
	h, err := r.Start(context.Background(), runtime.Request{Project: "shop", Output: out}.For(helper("api", "cooperative")))
	require.NoError(t, err)
	require.True(t, out.WaitFor("ready", 10*time.Second))

	stop() // the runner stops its processes as it goes
	ln, err = net.Listen("tcp", addr)
	require.NoError(t, err)
	stop = serveRunner(t, dir, ln, "new-token")
	defer stop()
	<-h.Done()
	require.NoError(t, r.Update(Config{Token: "new-token"}))

	outcome, err := h.Stop(context.Background())
	require.NoError(t, err)
	assert.Equal(t, runtime.Exited, outcome, "it ended before: the runner confirms it")
	out = runtimetest.NewRecorder()
	h, err = r.Start(context.Background(), runtime.Request{Project: "shop", Output: out}.For(helper("api", "identity")))
	require.NoError(t, err)
	assert.Equal(t, int64(2), h.Identity().Generation)
	require.True(t, out.WaitFor("generation=2", 10*time.Second))
	require.NoError(t, r.Close(), "before the runner's end")
}
