//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/etcdtest"
	harness "github.com/graftland/graft/internal/fleet"
	"github.com/graftland/graft/internal/testprog"
)

// TestFleet runs the fleet harness small (internal/fleet; bench/fleet.sh
// runs it large): 10 real graft hosts electing 3 floating plugins, each of
// which holds a flock while it runs, on a real 3-member etcd cluster and
// then on one shared directory, through each kind of fault once, at a
// random moment: kill -9 and SIGSTOP of a leading host, kill -9 of an etcd
// follower and of the etcd leader, a leading host cut off from etcd, the
// whole cluster stopped past the session TTL, the directory read-only.
// No plugin may ever have two holders or an epoch that repeats or goes
// back, and each must have a leader once the fleet settles; a kill -9 of
// a leading host fails over within twice the ttl.
func TestFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("the fleet takes minutes")
	}
	for _, backend := range []string{harness.Etcd, harness.File} {
		t.Run(backend, func(t *testing.T) {
			if backend == harness.Etcd {
				testprog.Need(t, etcdtest.Program, etcdtest.Package)
			}
			seed := uint64(time.Now().UnixNano())
			t.Logf("random source from %d", seed)
			root := t.TempDir()
			// The members and hosts write where the test's end removes them;
			// the shared directory must be writable again by then.
			rep, err := harness.Run(context.Background(), harness.Config{
				Graft: "graft", Hold: []string{"plug", "hold"}, Root: root, Backend: backend,
				Env:   []string{"GORACE=atexit_sleep_ms=0", "GRAFT_TEST_RUN=" + root},
				Hosts: 10, Plugins: 3, TTL: fleetTTL, Renew: fleetRenew, Poll: fPoll, LockStale: fLockStale,
				Faults: 1, Seed: seed, Logf: t.Logf,
			})
			if rep != nil {
				t.Logf("\n%s", rep)
			}
			if err != nil {
				dumpHostLogs(t, root)
			}
			require.NoError(t, err)
			assert.Empty(t, rep.Violations, "two holders at once, or an epoch that repeats or goes back")
			assert.Empty(t, rep.Leaderless, "plugins without a leader once the fleet settled")
			require.Len(t, rep.Faults, len(harness.Kinds(backend)))
			for _, f := range rep.Faults {
				if f.Kind == harness.KillHost {
					assert.NotZero(t, f.Lost, "the killed host led a plugin")
					// The bound is loose: in CI this machine runs the whole
					// suite beside 10 race-built hosts (one kill -9 failed
					// over in 14.7 s there); bench/fleet.sh measures it.
					for _, d := range f.Failovers {
						assert.LessOrEqual(t, d, 2*fleetTTL, "failover after %s", f.Kind)
					}
				}
				if f.Kind == harness.KillMember {
					assert.Zero(t, f.Lost, "a follower's death moves no plugin")
				}
				if f.Kind == harness.KillLeader {
					assert.NotZero(t, f.Elections, "the death of etcd's leader elects another")
				}
				assert.Zero(t, f.Extra, "epoch changes beyond one per plugin that lost its leader, after %s", f.Kind)
			}
			procsGone(t, root)
		})
	}
}

// The fleet's ttl (the session TTL on etcd) and renew: renew outlasts an
// etcd leader election (250 ms here), so that a leader keeps its term
// across the death of etcd's leader.
const (
	fleetTTL   = 10 * time.Second
	fleetRenew = time.Second
)

func dumpHostLogs(t *testing.T, root string) {
	logs, _ := filepath.Glob(filepath.Join(root, "h*", "host.stderr"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		t.Logf("--- %s ---\n%s", l, tailBytes(b, 3000))
	}
}

func tailBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// procsGone fails the test when a process of the run is left a few
// seconds after every host stopped, and kills it.
func procsGone(t *testing.T, run string) {
	deadline := time.Now().Add(10 * time.Second)
	for len(marked(run)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := marked(run); len(left) > 0 {
		t.Errorf("processes left after every host stopped: %v", left)
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
