//go:build linux

package main

import (
	"os"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFloatingWedgedLeader: the leader's relay, stopped with SIGSTOP, is
// alive but deaf. Its host probes it at every renewal with its HTTP ready
// check (a TCP connect would pass: the kernel accepts for a stopped
// listener); after 3 failed probes it stops the relay (the whole stop,
// 7 seconds, since a stopped process handles no SIGTERM) and releases the
// lease. Another host leads within ttl + poll + the probe budget.
func TestFloatingWedgedLeader(t *testing.T) {
	f := newFleet(t, 2)
	for _, h := range f.hosts {
		b, err := os.ReadFile(h.file())
		require.NoError(t, err)
		yaml := regexp.MustCompile(`command: \[plug, listen, relay, "([^"]*)"\]`).ReplaceAllString(string(b),
			"command: [plug, http, relay, \"${1}\"]\n    ready: {http: \"http://${1}/\"}")
		yaml = regexp.MustCompile(`lockStale: (\d+) millis\}`).ReplaceAllString(yaml, "lockStale: $1 millis, probe: true}")
		require.NoError(t, os.WriteFile(h.file(), []byte(yaml), 0o644))
	}
	f.startAll()
	l, _ := f.leaderAfter(0, 10*time.Second)
	f.settle(l.Holder, 5*time.Second)
	old := f.host(l.Holder)
	r, err := old.relay()
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(r.PID, syscall.SIGSTOP))
	wedged := time.Now()
	t.Cleanup(func() { syscall.Kill(r.PID, syscall.SIGCONT) }) // nothing left stopped, should the test fail first

	probes := 3 * 2 * fRenew // three probes, each due a renew after the last and given a renew
	l2, seen := f.leaderAfter(l.Epoch, fTTL+fPoll+probes+fSlack+5*time.Second)
	took := seen.Sub(wedged)
	t.Logf("another host leads %s after the leader's relay was stopped (ttl + poll + probes = %s)", took, fTTL+fPoll+probes)
	assert.NotEqual(t, old.id, l2.Holder)
	assert.Less(t, took, fTTL+fPoll+probes+fSlack)
	assert.False(t, pidAlive(r.PID), "the wedged relay was stopped before the lease was released")
	assert.Contains(t, old.stderr(), "giving up the lead")
	f.oneHostPerGeneration()
}
