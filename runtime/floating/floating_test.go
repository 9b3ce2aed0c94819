//go:build linux

package floating

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/internal/fsfault"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/local"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// tracking is a placement that remembers every plugin it started, so
// that the conformance kit can tell that none of them is left.
type tracking struct {
	runtime.Placement
	mu sync.Mutex
	hs []runtime.Handle
}

func (tr *tracking) Start(ctx context.Context, req runtime.Request) (runtime.Handle, error) {
	h, err := tr.Placement.Start(ctx, req)
	if err == nil {
		tr.mu.Lock()
		tr.hs = append(tr.hs, h)
		tr.mu.Unlock()
	}
	return h, err
}

// gone reports whether every plugin started is gone.
func (tr *tracking) gone() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, h := range tr.hs {
		select {
		case <-h.Done():
		default:
			return false
		}
		if !runtimetest.Gone(h.PID()) {
			return false
		}
	}
	return true
}

// TestConformance: a floating placement of one host, the leader of each
// of its plugins' elections, holds to what every placement promises.
func TestConformance(t *testing.T) {
	var inners, timings sync.Map // *testing.T -> *tracking, runtime.Timing
	runtimetest.Run(t, runtimetest.Kit{
		New: func(t *testing.T, timing runtime.Timing) runtime.Placement {
			inner := &tracking{Placement: local.New(local.Options{Timing: timing})}
			t.Cleanup(func() { assert.NoError(t, inner.Close()) })
			inners.Store(t, inner)
			timings.Store(t, timing)
			return New(inner, Options{HostID: "only", Timing: timing})
		},
		Plugin: func(t *testing.T, name string, b runtimetest.Behavior) *spec.Plugin {
			var p *spec.Plugin
			switch b {
			case runtimetest.Failing:
				p = plugin(name, t.TempDir(), testsupport.FreeAddr(t), "exit", "3", "one", "two", "three")
			default:
				p = plugin(name, t.TempDir(), testsupport.FreeAddr(t), string(b))
			}
			// The fixed windows need a ttl that holds them (elect.MinTTL).
			if v, ok := timings.Load(t); ok {
				tm := v.(runtime.Timing)
				budget := tm.ShutdownTimeout + tm.ExitWindow + tm.KillAfter
				p.Elect.TTL = spec.FromStd(max(ttl, elect.MinTTL(renew, budget)+time.Second))
			}
			return p
		},
		// A shutdown timeout of a second: the cases that cancel a stop
		// check it ended before the timeout would have ended it, which
		// 300 ms did not leave a loaded machine.
		Timing:     runtime.Timing{ShutdownTimeout: time.Second, ExitWindow: short.ExitWindow, KillAfter: short.KillAfter},
		Forced:     func(err error) bool { var e *runtime.LocalTerminationTimeout; return errors.As(err, &e) },
		Generation: 1,
		Gone: func(t *testing.T, h runtime.Handle) bool {
			inner, _ := inners.Load(t)
			return inner.(*tracking).gone()
		},
		Elected: true,
	})
}

// fhost is one host of a fleet: a floating placement with a clock of its
// own, running the fleet's relay.
type fhost struct {
	id    string
	clock *freezable
	p     *Placement
	addr  string // where its relay serves when it leads
	h     runtime.Handle
}

// fleet starts n hosts' relays, elected in dir, with clocks skewed by
// skews (none: real time), at once, and returns them once each Start has
// returned.
func fleet(t *testing.T, dir string, n int, skews ...time.Duration) []*fhost {
	hosts := make([]*fhost, n)
	var wg sync.WaitGroup
	for i := range hosts {
		var base elect.Clock = elect.Skewed(0)
		if i < len(skews) {
			base = elect.Skewed(skews[i])
		}
		f := &fhost{id: string(rune('a' + i)), clock: newFreezable(base), addr: testsupport.FreeAddr(t)}
		f.p = newPlacement(t, f.id, f.clock)
		hosts[i] = f
		wg.Go(func() {
			h, err := f.p.Start(context.Background(), runtime.Request{Project: "fleet", Output: runtimetest.NewRecorder()}.For(plugin("relay", dir, f.addr, "listen", "0s", f.addr)))
			if assert.NoError(t, err, "host %s", f.id) {
				f.h = h
			}
		})
	}
	wg.Wait()
	require.False(t, t.Failed())
	return hosts
}

func (f *fhost) state() runtime.State { return f.h.(runtime.Reporter).State() }

// leaders are the hosts that say they lead.
func leaders(hosts []*fhost) []string {
	var ids []string
	for _, f := range hosts {
		if f.state().Role == string(Leading) {
			ids = append(ids, f.id)
		}
	}
	return ids
}

// awaitChange waits up to d for f's placement to publish a leader of
// epoch at least epoch, and returns it and when it came.
func (f *fhost) awaitChange(t *testing.T, epoch int64, d time.Duration) (elect.Lease, time.Time) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case c := <-f.p.Changes():
			assert.Equal(t, "relay", c.Plugin)
			if c.Lease.Epoch >= epoch {
				return c.Lease, time.Now()
			}
		case <-deadline:
			t.Fatalf("host %s saw no leader of epoch %d within %s", f.id, epoch, d)
		}
	}
}

func host(hosts []*fhost, id string) *fhost {
	for _, f := range hosts {
		if f.id == id {
			return f
		}
	}
	return nil
}

// TestFailover: exactly one of three hosts leads, and each publishes it.
// A leader frozen past ttl (its election's timers stopped, as by
// SIGSTOP) is replaced by another, with the next epoch; resumed, it
// finds the newer epoch at its next renewal, stops its relay and
// follows. A leader that stops releases the lease: another leads within
// a poll.
func TestFailover(t *testing.T) {
	hosts := fleet(t, t.TempDir(), 3)
	first, _ := hosts[0].awaitChange(t, 1, 5*time.Second)
	assert.Equal(t, int64(1), first.Epoch)
	for _, f := range hosts[1:] {
		l, _ := f.awaitChange(t, 1, 5*time.Second)
		assert.Equal(t, first, l, "every host publishes the one leader")
	}
	assert.Equal(t, []string{first.Holder}, leaders(hosts))
	old := host(hosts, first.Holder)
	assert.Equal(t, old.addr, first.Address)
	require.Eventually(t, func() bool {
		for _, f := range hosts {
			if st := f.state(); f != old && (st.Status != runtime.Standby || st.Role != string(Following) || st.Address != old.addr) {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "the others stand by, following the leader")
	relay := old.state().PID
	require.NotZero(t, relay)
	assert.Equal(t, runtime.Identity{ID: "relay", Generation: 1}, old.h.Identity())

	// Its election frozen, as a frozen host's: the init of its namespace,
	// which runs on, stops its relay at the end of its term, before the
	// next leader.
	old.clock.freeze()
	frozen := time.Now()
	next := hosts[(indexOf(hosts, old)+1)%3]
	relayGone := testsupport.WaitGone(t, ttl+slack, relay).Sub(frozen)
	second, seen := next.awaitChange(t, 2, ttl+poll+slack+5*time.Second)
	took := seen.Sub(frozen)
	t.Logf("failover from a frozen leader: %s (ttl + poll = %s); its relay stopped after %s", took, ttl+poll, relayGone)
	assert.Equal(t, int64(2), second.Epoch)
	assert.NotEqual(t, old.id, second.Holder)
	assert.Greater(t, took, ttl-renew, "not before the lease froze for ttl")
	assert.Less(t, took, ttl+poll+slack)
	assert.Less(t, relayGone, took, "the frozen leader's relay was gone before the next leader")

	old.clock.thaw()
	require.Eventually(t, func() bool {
		st := old.state()
		return st.Role == string(Following) && st.Status == runtime.Standby && st.Identity.Generation == 2
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{second.Holder}, leaders(hosts))

	leader := host(hosts, second.Holder)
	stopped := time.Now()
	outcome, err := leader.h.Stop(context.Background())
	require.NoError(t, err)
	assert.Equal(t, runtime.Exited, outcome)
	third, seen := old.awaitChange(t, 3, 10*time.Second)
	t.Logf("handover after a stop: %s (poll = %s)", seen.Sub(stopped), poll)
	assert.Less(t, seen.Sub(stopped), poll+slack)
	assert.Equal(t, int64(3), third.Epoch)
	assert.NotEqual(t, leader.id, third.Holder)
}

func indexOf(hosts []*fhost, f *fhost) int {
	for i := range hosts {
		if hosts[i] == f {
			return i
		}
	}
	return -1
}

// TestStaleLockAndSkewedClocks: a contender that crashed holding the
// lock keeps everyone out until the lock is older than lockStale, by the
// directory's clock; hosts whose wall clocks are an hour off elect, and
// take over after ttl, as any: the election never compares clocks.
func TestStaleLockAndSkewedClocks(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "relay.lock")
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	created := time.Now()
	hosts := fleet(t, dir, 3, 0, time.Hour, -time.Hour)
	first, seen := hosts[0].awaitChange(t, 1, lockStale+slack+10*time.Second)
	took := seen.Sub(created)
	t.Logf("leader elected %s after a stale lock was left (lockStale = %s)", took, lockStale)
	assert.Greater(t, took, lockStale-100*time.Millisecond, "the lock was cleared before lockStale")
	assert.Less(t, took, lockStale+2*slack)
	assert.Equal(t, int64(1), first.Epoch)
	assert.NoFileExists(t, lock)
	assert.Equal(t, []string{first.Holder}, leaders(hosts))

	old := host(hosts, first.Holder)
	require.Eventually(t, func() bool {
		for _, f := range hosts {
			if f != old && f.state().Role != string(Following) {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond)
	old.clock.freeze()
	frozen := time.Now()
	other := hosts[(indexOf(hosts, old)+1)%3]
	second, seen := other.awaitChange(t, 2, ttl+poll+slack+5*time.Second)
	took = seen.Sub(frozen)
	assert.Greater(t, took, ttl-renew)
	assert.Less(t, took, ttl+poll+slack)
	assert.Equal(t, int64(2), second.Epoch)
	old.clock.thaw()
}

// TestReadOnlyLeaseDir: when the directory turns read-only, the leader's
// next renewal fails and it stops its relay; no one can lead. Writable
// again, a leader is elected with a higher epoch.
func TestReadOnlyLeaseDir(t *testing.T) {
	dir := t.TempDir()
	hosts := fleet(t, dir, 2)
	first, _ := hosts[0].awaitChange(t, 1, 5*time.Second)
	var relay int
	require.Eventually(t, func() bool { relay = host(hosts, first.Holder).state().PID; return relay != 0 },
		5*time.Second, 10*time.Millisecond, "the leader runs its relay")

	restore := fsfault.ReadOnly(t, dir)
	began := time.Now()
	for !runtimetest.Gone(relay) {
		require.Less(t, time.Since(began), renew+slack, "the leader stops its relay once it cannot renew")
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("relay stopped %s after the lease dir turned read-only (renew = %s)", time.Since(began), renew)
	assert.Empty(t, leaders(hosts))

	restore()
	l, _ := hosts[0].awaitChange(t, first.Epoch+1, ttl+poll+slack+5*time.Second)
	assert.Greater(t, l.Epoch, first.Epoch)
}

// TestEpochExhausted: a lease that has had the largest epoch fails the
// start at once with the *elect.ExhaustedError, never wrapping the
// generation, and the lease is left as it was.
func TestEpochExhausted(t *testing.T) {
	dir := t.TempDir()
	last := elect.Lease{Holder: "gone", Address: "127.0.0.1:1", Epoch: math.MaxInt64, Released: true}
	b, err := json.Marshal(last)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "relay.lease.json"), b, 0o644))
	p := newPlacement(t, "a", nil)
	began := time.Now()
	h, err := p.Start(context.Background(), runtime.Request{Output: runtimetest.NewRecorder()}.For(plugin("relay", dir, "127.0.0.1:1", "cooperative")))
	var exhausted *elect.ExhaustedError
	require.ErrorAs(t, err, &exhausted)
	assert.Nil(t, h)
	assert.Less(t, time.Since(began), ttl, "at once, not after ttl and poll")
	l, _, err := elect.Read(dir, "relay")
	require.NoError(t, err)
	assert.Equal(t, last, l)
	_, err = p.Leader(context.Background(), "relay")
	assert.Error(t, err, "a failed start leaves the election")
}

// TestChangesKeepTheLastOfEachPlugin: changes no one has read yet wait,
// one per plugin, the last; those of different plugins keep their order.
func TestChangesKeepTheLastOfEachPlugin(t *testing.T) {
	q := newQueue()
	defer q.close()
	q.publish(Change{Plugin: "a", Lease: elect.Lease{Epoch: 1}})
	q.publish(Change{Plugin: "b", Lease: elect.Lease{Epoch: 7}})
	q.publish(Change{Plugin: "a", Lease: elect.Lease{Epoch: 2}})
	var got []Change
	for range 2 {
		select {
		case c := <-q.out:
			got = append(got, c)
		case <-time.After(5 * time.Second):
			t.Fatal("no change delivered")
		}
	}
	assert.Equal(t, []Change{{Plugin: "a", Lease: elect.Lease{Epoch: 2}}, {Plugin: "b", Lease: elect.Lease{Epoch: 7}}}, got)
	select {
	case c := <-q.out:
		t.Fatalf("a change delivered twice: %v", c)
	case <-time.After(50 * time.Millisecond):
	}
}
