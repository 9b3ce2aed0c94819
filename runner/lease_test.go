//go:build linux

package runner

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runnerapi"
)

// The lease tests' durations: short, with generous slack for a loaded
// machine running -race.
const (
	testLease = 400 * time.Millisecond
	testGrace = 200 * time.Millisecond
	slack     = 1500 * time.Millisecond
)

// TestLeaseRunsOut: a session nobody renews ends when its lease runs out,
// not before: its processes are interrupted, and killed after grace, and
// the session is forgotten.
func TestLeaseRunsOut(t *testing.T) {
	h := newHarness(t, Options{Lease: 5 * time.Second, Grace: testGrace})
	sess := h.open(testLease)
	last := h.keepAlive(sess)
	ev := h.events(sess)
	coop := h.start("lease.coop", plugin(t, sess, "cooperative"))
	stub := h.start("lease.stubborn", plugin(t, sess, "stubborn"))
	ev.ready(t)
	ev.ready(t)
	// The lease runs from the last renewal.
	renewed := last()

	coopGone := testsupport.WaitGone(t, testLease+testGrace+slack, coop.PID)
	stubGone := testsupport.WaitGone(t, testLease+testGrace+slack, stub.PID)
	assert.GreaterOrEqual(t, coopGone.Sub(renewed), testLease, "not before the lease ran out")
	assert.GreaterOrEqual(t, stubGone.Sub(renewed), testLease+testGrace, "killed grace after the interrupt")
	assert.Less(t, stubGone.Sub(renewed), testLease+testGrace+slack)

	assert.Equal(t, http.StatusNotFound, h.renew(sess))
	_, status, e := h.tryStart("lease.coop", plugin(t, sess, "cooperative"))
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, runnerapi.KindNoSession, e.Kind)
	require.True(t, h.log.WaitFor("lease ran out", time.Second))
	log := h.log.String()
	assert.Contains(t, log, "level=WARN msg=\"lease ran out\" holder=TestLeaseRunsOut session="+sess)
	assert.Contains(t, log, "processes=\"[lease.coop lease.stubborn]\"")
	assert.Eventually(t, func() bool { return len(h.status().Instances) == 0 }, time.Second, 5*time.Millisecond)
}

// TestRenewalsKeepItAlive: a session renewed every third of its lease
// outlives several leases; DELETE then stops its processes at once.
func TestRenewalsKeepItAlive(t *testing.T) {
	h := newHarness(t, Options{Grace: testGrace})
	sess := h.open(testLease)
	last := h.keepAlive(sess)
	ev := h.events(sess)
	st := h.start("renewed", plugin(t, sess, "cooperative"))
	ev.ready(t)
	last()
	for end := time.Now().Add(3 * testLease); time.Now().Before(end); {
		time.Sleep(testLease / 3)
		require.Equal(t, http.StatusOK, h.renew(sess))
		require.True(t, alive(st.PID))
	}
	pings := 0
	for len(ev.c) > 0 {
		if e := <-ev.c; e.Type == runnerapi.EventPing {
			pings++
		}
	}
	assert.GreaterOrEqual(t, pings, 4, "a ping every third of the lease")

	began := time.Now()
	var closed runnerapi.Closed
	status, e := h.call("DELETE", "/v1/sessions/"+sess, nil, &closed)
	require.Equal(t, http.StatusOK, status, "%+v", e)
	assert.Less(t, time.Since(began), time.Second)
	assert.Equal(t, []runnerapi.Stopped{{Instance: "renewed", Generation: 1, Outcome: runnerapi.Killed}}, closed.Stopped)
	assert.False(t, alive(st.PID), "stopped before the answer")
	assert.Equal(t, http.StatusNotFound, h.renew(sess))
	status, e = h.call("DELETE", "/v1/sessions/"+sess, nil, nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, runnerapi.KindNoSession, e.Kind)
}

// TestSessionRequests: leases are checked; the status lists sessions.
func TestSessionRequests(t *testing.T) {
	h := newHarness(t, Options{Lease: 7 * time.Second, Grace: testGrace, Version: "graft v9"})
	var s runnerapi.Session
	status, e := h.call("POST", "/v1/sessions", runnerapi.OpenSession{Holder: "me"}, &s)
	require.Equal(t, http.StatusOK, status, "%+v", e)
	assert.Equal(t, int64(7000), s.LeaseMillis, "the runner's lease")
	assert.Equal(t, int64(200), s.GraceMillis)
	assert.Equal(t, "graft v9", s.Runner)
	assert.Len(t, s.BootID, 36)
	for _, lease := range []int64{-1, 1 << 62} {
		status, e = h.call("POST", "/v1/sessions", runnerapi.OpenSession{LeaseMillis: lease}, nil)
		assert.Equal(t, http.StatusBadRequest, status, "lease %d", lease)
		assert.Equal(t, runnerapi.KindBadRequest, e.Kind)
	}
	var renewed runnerapi.Renewed
	status, _ = h.call("POST", "/v1/sessions/"+s.Session+"/renew", nil, &renewed)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, int64(7000), renewed.LeaseMillis)
	st := h.status()
	assert.Equal(t, "graft v9", st.Runner)
	require.Len(t, st.Sessions, 1)
	assert.Equal(t, "me", st.Sessions[0].Holder)
	assert.WithinDuration(t, time.Now().Add(7*time.Second), st.Sessions[0].Expires, time.Second)
}

// TestEndSessionDuringStart: a session ended while a start under it waits
// for its process to be ready answers once that process is gone too, and
// lists it; the start fails with no-session.
func TestEndSessionDuringStart(t *testing.T) {
	h := newHarness(t, Options{Lease: 5 * time.Second, Grace: testGrace})
	sess := h.open(0)
	ev := h.events(sess)
	addr := testsupport.FreeAddr(t)
	slow := plugin(t, sess, "listen", "1h", addr)
	slow.Ready = &launch.Ready{Probe: launch.Probe{TCP: addr}, Timeout: launch.Duration(60000 * time.Millisecond)}
	type answer struct {
		status int
		e      runnerapi.ErrorBody
	}
	started := make(chan answer, 1)
	go func() {
		_, status, e := h.tryStart("end.slow", slow)
		started <- answer{status, e}
	}()
	ev.until(t, 5*time.Second, func(e runnerapi.Event) bool { return e.Instance == "end.slow" && strings.HasPrefix(e.Line, "waiting") })
	ps := marked(t)
	require.Len(t, ps, 1)

	var closed runnerapi.Closed
	status, e := h.call("DELETE", "/v1/sessions/"+sess, nil, &closed)
	require.Equal(t, http.StatusOK, status, "%+v", e)
	assert.False(t, alive(ps[0].pid), "gone before the session's end answers")
	assert.Equal(t, []runnerapi.Stopped{{Instance: "end.slow", Generation: 1, Outcome: runnerapi.Killed}}, closed.Stopped)
	a := <-started
	assert.Equal(t, http.StatusNotFound, a.status)
	assert.Equal(t, runnerapi.KindNoSession, a.e.Kind)
}

// TestStopThroughANewSession: a host that lost its session asks, through
// a new one, for the stop of what it started under the old: a process
// still running is stopped; one its lease's end is stopping is joined;
// one gone answers its exit, remembered or not; a generation never
// started is not found.
func TestStopThroughANewSession(t *testing.T) {
	h := newHarness(t, Options{Lease: 5 * time.Second, Grace: testGrace})
	old := h.open(testLease)
	last := h.keepAlive(old)
	ev := h.events(old)
	coop := h.start("again.coop", plugin(t, old, "cooperative"))
	stub := h.start("again.stub", plugin(t, old, "stubborn"))
	ev.ready(t)
	ev.ready(t)
	sess := h.open(0)

	res, status, e := h.stop(sess, "again.coop", coop.Generation, time.Second)
	require.Equal(t, http.StatusOK, status, "%+v", e)
	assert.Equal(t, runnerapi.Exited, res.Outcome)
	assert.False(t, alive(coop.PID))
	last()

	// The old lease runs out: the stubborn one is interrupted, and killed
	// after grace. A stop meanwhile waits for that.
	require.Eventually(t, func() bool {
		for _, in := range h.status().Instances {
			if in.Instance == "again.stub" && in.Status == runnerapi.StatusStopping {
				return true
			}
		}
		return false
	}, testLease+slack, 2*time.Millisecond, "the end of the old lease stops it")
	res, status, e = h.stop(sess, "again.stub", stub.Generation, time.Second)
	require.Equal(t, http.StatusOK, status, "%+v", e)
	assert.Equal(t, runnerapi.Killed, res.Outcome)
	assert.False(t, alive(stub.PID))
	res, status, e = h.stop(sess, "again.stub", stub.Generation, time.Second)
	require.Equal(t, http.StatusOK, status, "%+v", e)
	assert.Equal(t, runnerapi.Killed, res.Outcome, "remembered")

	_, status, e = h.stop(sess, "again.stub", stub.Generation+1, time.Second)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, runnerapi.KindNoInstance, e.Kind)

	// A runner started again knows the generation ended, not how.
	dir := h.dir
	h.close(t)
	h = newHarness(t, Options{Lease: 5 * time.Second, Grace: testGrace}, dir)
	sess = h.open(0)
	res, status, e = h.stop(sess, "again.stub", stub.Generation, time.Second)
	require.Equal(t, http.StatusOK, status, "%+v", e)
	assert.Equal(t, runnerapi.Exited, res.Outcome)
	assert.Equal(t, -1, res.Exit.Code)
	_, status, _ = h.stop(sess, "again.never", 1, time.Second)
	assert.Equal(t, http.StatusNotFound, status)
}

// TestReplicaSockets: replicas of one holder share the sockets the
// runner holds for them (launch.Spec.ListenKey), across its sessions: a
// session that ends leaves the socket to the replica of another that
// runs on, and the socket closes with the last of them.
func TestReplicaSockets(t *testing.T) {
	h := newHarness(t, short)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	listening := func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	var sessions []string
	for i := 1; i <= 2; i++ {
		sess := h.open(10 * time.Second)
		sessions = append(sessions, sess)
		req := plugin(t, sess, "cooperative")
		req.Spec.Listen = []launch.Listen{{Name: "http", TCP: addr}}
		req.Spec.ListenKey = "replicas:test.api"
		h.start(fmt.Sprintf("test.api.%d", i), req)
	}
	require.True(t, listening())
	for i, sess := range sessions {
		status, e := h.call("DELETE", "/v1/sessions/"+sess, nil, nil)
		require.Equal(t, http.StatusOK, status, "%+v", e)
		assert.Equal(t, i == 0, listening(), "after session %d ended", i+1)
	}
}

// TestOverlap: a start-first start (Overlap) leaves the instance's
// running process running beside the new one, each its own generation,
// until a stop names it; meanwhile the instance takes no other start.
func TestOverlap(t *testing.T) {
	h := newHarness(t, short)
	sess := h.open(10 * time.Second)
	one := h.start("test.api", plugin(t, sess, "cooperative"))
	req := plugin(t, sess, "cooperative")
	req.Overlap = true
	two := h.start("test.api", req)
	assert.Equal(t, one.Generation+1, two.Generation)
	assert.True(t, alive(one.PID), "the old one runs on")
	assert.True(t, alive(two.PID))
	assert.Len(t, h.status().Instances, 2)

	_, status, e := h.tryStart("test.api", req)
	assert.Equal(t, http.StatusConflict, status)
	assert.Equal(t, runnerapi.KindBusy, e.Kind)
	assert.Contains(t, e.Error, "which a start-first start left running, has not stopped yet")

	res, status, e := h.stop(sess, "test.api", one.Generation, time.Second)
	require.Equal(t, http.StatusOK, status, "%+v", e)
	assert.Equal(t, runnerapi.Exited, res.Outcome)
	assert.False(t, alive(one.PID))
	assert.True(t, alive(two.PID), "the new one is the instance's")
	insts := h.status().Instances
	require.Len(t, insts, 1)
	assert.Equal(t, two.Generation, insts[0].Generation)
	three := h.start("test.api", plugin(t, sess, "cooperative")) // a stop-first start replaces it
	assert.False(t, alive(two.PID))
	assert.True(t, alive(three.PID))
}

// TestHoldSocketsAhead: a host has the runner hold an instance's sockets
// before its start (POST .../sockets): bound then, taken by the start as
// they are, refused whole when one cannot be bound, and closed with the
// session.
func TestHoldSocketsAhead(t *testing.T) {
	h := newHarness(t, short)
	sess := h.open(10 * time.Second)
	free, taken := freeTCP(t), freeTCP(t)
	other, err := net.Listen("tcp", taken)
	require.NoError(t, err)
	defer other.Close()
	listening := func(addr string) bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	hold := func(ls ...launch.Listen) (int, runnerapi.ErrorBody) {
		return h.call("POST", "/v1/instances/test.api/sockets", runnerapi.HoldSockets{Session: sess, Listen: ls}, nil)
	}
	status, e := hold(launch.Listen{Name: "http", TCP: free}, launch.Listen{Name: "extra", TCP: taken})
	assert.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Equal(t, runnerapi.KindStartFailed, e.Kind)
	assert.Contains(t, e.Error, "listen[1] (extra)")
	assert.False(t, listening(free), "refused whole")

	status, e = hold(launch.Listen{Name: "http", TCP: free})
	require.Equal(t, http.StatusOK, status, "%+v", e)
	assert.True(t, listening(free), "bound before any start")
	req := plugin(t, sess, "cooperative")
	req.Spec.Listen = []launch.Listen{{Name: "http", TCP: free}}
	h.start("test.api", req) // would fail to bind it again

	status, e = h.call("DELETE", "/v1/sessions/"+sess, nil, nil)
	require.Equal(t, http.StatusOK, status, "%+v", e)
	assert.False(t, listening(free), "closed with the session")
}

// freeTCP is a loopback address no one listens on.
func freeTCP(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}
