//go:build linux

package floating

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/local"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// share is one host's view of the shared directory, through the
// elections' Fault seam: it answers, hangs (operations block until it is
// healed, as on an NFS server that went away) or fails (as on one that
// answers with errors). This machine has no NFS server to unplug.
type share struct {
	mu   sync.Mutex
	mode string        // "", "hang", "hang write" or "fail write"
	back chan struct{} // closed when a hang ends
}

func newShare() *share {
	back := make(chan struct{})
	close(back)
	return &share{back: back}
}

func (s *share) fault(op string) error {
	s.mu.Lock()
	mode, back := s.mode, s.back
	s.mu.Unlock()
	switch {
	case mode == "hang", mode == "hang write" && op == "write lease":
		<-back
	case mode == "fail write" && op == "write lease":
		return errors.New("input/output error")
	}
	return nil
}

func (s *share) set(mode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.back = make(chan struct{})
	s.mode = mode
}

// heal makes the share answer again, releasing the operations it held.
func (s *share) heal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.back:
	default:
		close(s.back)
	}
	s.mode = ""
}

// The durations of the fencing tests: a ttl that holds 2 × renew and the
// stop windows of fast (elect.MinTTL), short enough for many rounds.
const (
	fenceTTL   = time.Second
	fenceRenew = 150 * time.Millisecond
	fencePoll  = 100 * time.Millisecond
)

var fast = runtime.Timing{ShutdownTimeout: 200 * time.Millisecond, ExitWindow: 50 * time.Millisecond, KillAfter: 50 * time.Millisecond}

// fencedHost is a host whose share can fail.
type fencedHost struct {
	fhost
	share *share
}

// fencedFleet starts n hosts running the plugin that mk makes for an
// address, elected in dir with the fencing tests' durations.
func fencedFleet(t *testing.T, n int, mk func(addr string) *spec.Plugin) []*fencedHost {
	hosts := make([]*fencedHost, n)
	var wg sync.WaitGroup
	for i := range hosts {
		f := &fencedHost{fhost: fhost{id: string(rune('a' + i)), clock: newFreezable(elect.Skewed(0)), addr: testsupport.FreeAddr(t)}, share: newShare()}
		inner := local.New(local.Options{Timing: fast})
		t.Cleanup(func() { assert.NoError(t, inner.Close()) })
		f.p = New(inner, Options{HostID: f.id, Clock: f.clock, Timing: fast, Fault: f.share.fault})
		t.Cleanup(func() { assert.NoError(t, f.p.Close()) })
		t.Cleanup(f.share.heal) // first: nothing waits on the share at Close
		hosts[i] = f
		p := mk(f.addr)
		p.Elect.TTL, p.Elect.Renew, p.Elect.Poll = spec.FromStd(fenceTTL), spec.FromStd(fenceRenew), spec.FromStd(fencePoll)
		p.Elect.LockStale = spec.FromStd(500 * time.Millisecond)
		wg.Go(func() {
			h, err := f.p.Start(context.Background(), runtime.Request{Project: "fleet", Output: runtimetest.NewRecorder()}.For(p))
			if assert.NoError(t, err, "host %s", f.id) {
				f.h = h
			}
		})
	}
	wg.Wait()
	require.False(t, t.Failed())
	return hosts
}

// runningLeader waits until one host leads and runs its plugin, and
// returns it, the plugin's process and its epoch.
func runningLeader(t *testing.T, hosts []*fencedHost, after int64) (*fencedHost, int, int64) {
	t.Helper()
	var leader *fencedHost
	var pid int
	var epoch int64
	require.Eventually(t, func() bool {
		for _, f := range hosts {
			st := f.state()
			if st.Role == string(Leading) && st.Status == runtime.Running && st.PID != 0 && st.Identity.Generation > after {
				leader, pid, epoch = f, st.PID, st.Identity.Generation
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond, "a leader of an epoch past %d runs its plugin", after)
	return leader, pid, epoch
}

// lastWrite is the mtime of the lease as x last wrote it, read from the
// share as the other hosts see it, once what x had under way has landed.
func lastWrite(t *testing.T, dir string, x *fencedHost) time.Time {
	t.Helper()
	time.Sleep(20 * time.Millisecond) // a write past the fault's check lands
	l, mtime, err := elect.Read(dir, "relay")
	require.NoError(t, err)
	require.Equal(t, x.id, l.Holder, "the lease is still the leader's")
	return mtime
}

// TestFencedInTime: over 20 rounds, the leader's share hangs, hangs its
// writes only, fails its writes, or shows a newer epoch (written by an
// intruder, as after a split), in turn. Every time the leader's plugin is confirmed gone before ttl has
// passed since its last successful renewal landed on the share, which is
// before any other host may lead; and, while x's share stays broken, the
// other host leads with a higher epoch. At no time do the two hosts'
// plugins run at once: each takes an exclusive flock as it starts, which
// the kernel drops as it exits, and records a lock it could not take.
// (Comparing the new plugin's start with when this test saw the old one
// gone would depend on how promptly the test was scheduled.)
func TestFencedInTime(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(t.TempDir(), "relay.lock")
	hosts := fencedFleet(t, 2, func(addr string) *spec.Plugin { return plugin("relay", dir, addr, "exclusive", lock, addr) })
	modes := []string{"hang", "hang write", "fail write", "newer"}
	var epoch int64
	for round := range 20 {
		mode := modes[round%len(modes)]
		x, pid, e := runningLeader(t, hosts, epoch)
		var last time.Time
		switch mode {
		case "hang", "hang write", "fail write":
			x.share.set(mode)
			last = lastWrite(t, dir, x)
		case "newer":
			last = lastWrite(t, dir, x)
			intruder := elect.Lease{Holder: "intruder", Address: "127.0.0.1:1", Epoch: e + 1}
			writeLease(t, dir, intruder)
			e++
		}
		gone := testsupport.WaitGone(t, fenceTTL+slack, pid)
		left := last.Add(fenceTTL).Sub(gone)
		t.Logf("round %d (%s): host %s's plugin gone %s before ttl after its last renewal", round, mode, x.id, left)
		assert.Positive(t, left, "round %d (%s): the plugin outlived the lease", round, mode)
		if mode != "newer" {
			// The share stays broken for x until the other host leads.
			y, _, _ := runningLeader(t, hosts, e)
			assert.NotEqual(t, x.id, y.id)
		}
		overlaps, err := os.ReadFile(lock + ".overlap")
		assert.ErrorIs(t, err, os.ErrNotExist, "round %d (%s): two plugins ran at once: %s", round, mode, overlaps)
		x.share.heal()
		epoch = e // the next round's leader has a later epoch
	}
}

// writeLease replaces the lease with l, as another host would.
func writeLease(t *testing.T, dir string, l elect.Lease) {
	t.Helper()
	b, err := json.Marshal(l)
	require.NoError(t, err)
	tmp := filepath.Join(dir, "intruder.tmp")
	require.NoError(t, os.WriteFile(tmp, b, 0o644))
	require.NoError(t, os.Rename(tmp, filepath.Join(dir, "relay.lease.json")))
}

// TestWedgedLeader: the leader's plugin, stopped with SIGSTOP, is alive
// but deaf: its HTTP ready check, the leader's probe, fails, and after
// probeFailures probes the leader stops it and releases the lease.
// Another host leads within ttl + poll + the probe budget.
func TestWedgedLeader(t *testing.T) {
	dir := t.TempDir()
	hosts := fencedFleet(t, 2, func(addr string) *spec.Plugin {
		p := plugin("relay", dir, addr, "serve", addr)
		p.Ready = &spec.Ready{Probe: launch.Probe{HTTP: "http://" + addr + "/"}, Timeout: spec.FromStd(5 * time.Second)}
		probe := true // the plugin is published at an address, not a port
		p.Elect.Probe = &probe
		return p
	})
	x, pid, epoch := runningLeader(t, hosts, 0)
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	wedged := time.Now()
	// The relay is killed by the stop; it is continued, should the test
	// fail first, so that nothing is left stopped.
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	y, _, next := runningLeader(t, hosts, epoch)
	took := time.Since(wedged)
	// Each probe is due a renew after the last, and waits at most a renew.
	probes := time.Duration(spec.DefaultProbeFailures) * 2 * fenceRenew
	t.Logf("another host leads %s after the leader's plugin was stopped (ttl + poll + probes = %s)", took, fenceTTL+fencePoll+probes)
	assert.NotEqual(t, x.id, y.id)
	assert.Greater(t, next, epoch)
	assert.Less(t, took, fenceTTL+fencePoll+probes+slack)
	assert.True(t, runtimetest.Gone(pid), "the wedged plugin was stopped before the lease was released")
}

// TestStartFailuresReleaseTheLease: a leader whose plugin fails to start
// startFailures times in a row releases the lease, so the other host
// tries; it backs off ttl before it contends again.
func TestStartFailuresReleaseTheLease(t *testing.T) {
	dir := t.TempDir()
	began := time.Now() // before any term, so before any leader gave up
	hosts := fencedFleet(t, 2, func(addr string) *spec.Plugin {
		p := plugin("relay", dir, addr, "exit", "3", "no luck")
		// A failed start is one that exits within a renew (150 ms) of
		// starting: the shell does so in a few milliseconds, where this
		// test binary again, under -race on a loaded machine, may not.
		p.Command = []string{"/bin/sh", "-c", "echo no luck; exit 3"}
		p.Retry = &spec.Retry{Delay: spec.FromStd(20 * time.Millisecond), Factor: 1, Max: spec.FromStd(20 * time.Millisecond)}
		return p
	})
	// The changes seen may skip an epoch (a term that ended before it was
	// read): the holders alternate by epoch, so each one's parity says who
	// held it.
	var leases []elect.Lease
	var third time.Time
	for epoch := int64(1); len(leases) < 3; {
		l, at := hosts[0].awaitChange(t, epoch, fenceTTL+fencePoll+2*slack)
		leases, third = append(leases, l), at
		epoch = l.Epoch + 1
	}
	t.Logf("leaders: %+v", leases)
	first := leases[0]
	for _, l := range leases[1:] {
		alternate := (l.Epoch-first.Epoch)%2 == 1
		assert.Equal(t, alternate, l.Holder != first.Holder, "the one that gave up lets the other lead: epoch %d held by %s, epoch %d by %s",
			first.Epoch, first.Holder, l.Epoch, l.Holder)
	}
	// The third lease seen is held by a host that led, gave up and backed
	// off: it is seen ttl after the test began at the least. (Not after the
	// first was seen: a change is seen up to a poll late, a give-up of
	// three quick failures may come sooner.)
	assert.GreaterOrEqual(t, third.Sub(began), fenceTTL, "a leader that gave up backed off ttl before it led again")
}
