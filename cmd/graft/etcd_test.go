//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/internal/etcdtest"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/plan"
)

// The etcd fleet's session TTL: like fTTL, it must hold 2 × renew and the
// stop's fixed 7 seconds, in whole seconds.
const eTTL = 8 * time.Second

// etcdReader reads who leads the fleet's relay on etcd, as another
// program would: the candidate key with the lowest create revision.
type etcdReader struct{ c *clientv3.Client }

func (r *etcdReader) lease() elect.Lease {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := r.c.Get(ctx, "/fleet/fleet.relay/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		return elect.Lease{}
	}
	var l elect.Lease // the key holds the holder and the address, as JSON
	if json.Unmarshal(resp.Kvs[0].Value, &l) != nil {
		return elect.Lease{}
	}
	l.Epoch = resp.Kvs[0].CreateRevision
	return l
}

// newEtcdFleet is newFleet, electing on a real etcd server of its own.
func newEtcdFleet(t *testing.T, n int) (*fleet, *etcdtest.Server) {
	srv := etcdtest.Start(t)
	f := newFleet(t, n)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, DialTimeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	f.etcd = &etcdReader{c}
	for _, h := range f.hosts {
		yaml := fmt.Sprintf(`name: fleet
plugins:
  relay:
    run: floating
    command: [plug, listen, relay, %q]
    elect: {address: %q, renew: %d millis, etcd: {endpoints: [%q], prefix: /fleet/, sessionTTL: %d seconds}}
  client:
    command: [plug, env, client, GRAFT_ADDR_RELAY]
    uses: [relay]
`, h.addr, h.addr, fRenew.Milliseconds(), srv.Endpoint(), int(eTTL.Seconds()))
		require.NoError(t, os.WriteFile(h.file(), []byte(yaml), 0o644))
	}
	return f, srv
}

// TestEtcdFailover: five hosts elect one leader on etcd, whose relay runs
// with the leader key's create revision as its generation; graft leader
// and graft status show etcd. kill -9 of the leader's host: another leads
// within the session TTL plus a second, and the clients follow it. A
// restart of etcd loses nothing: one leader after it.
func TestEtcdFailover(t *testing.T) {
	f, srv := newEtcdFleet(t, 5)
	f.startAll()
	l, _ := f.leaderAfter(0, 10*time.Second)
	assert.Equal(t, []string{l.Holder}, f.leaders())
	f.settle(l.Holder, 5*time.Second)
	for _, h := range f.hosts {
		h.waitClient(l.Address, 5*time.Second)
	}
	out, err := f.host(l.Holder).graft("leader", "relay")
	require.NoError(t, err, out)
	assert.Regexp(t, `Plugin: +relay \(instance fleet.relay, on etcd http://127.0.0.1:\d+, keys under /fleet/fleet.relay/\)`, out)
	assert.Contains(t, out, fmt.Sprintf("Epoch:     %d", l.Epoch))
	assert.Contains(t, out, "This host: "+l.Holder+", leader")
	out, err = f.host(l.Holder).graft("status")
	require.NoError(t, err, out)
	assert.Regexp(t, fmt.Sprintf(`relay\s+floating \(leader, etcd\)\s+running\s+fleet.relay\s+%d`, l.Epoch), out)

	old := f.host(l.Holder)
	old.kill()
	killed := time.Now()
	l2, seen := f.leaderAfter(l.Epoch, eTTL+fSlack+5*time.Second)
	took := seen.Sub(killed)
	t.Logf("failover after kill -9: %s (session ttl %s)", took, eTTL)
	assert.NotEqual(t, old.id, l2.Holder)
	assert.Less(t, took, eTTL+time.Second, "within the session TTL plus a second")
	for _, h := range f.hosts {
		if h != old {
			h.waitClient(l2.Address, 5*time.Second)
		}
	}
	// Without a host, graft leader asks etcd itself.
	out, err = old.graft("leader", "relay")
	require.NoError(t, err, out)
	assert.Contains(t, out, "Holder:    "+l2.Holder)
	assert.Contains(t, out, fmt.Sprintf("Epoch:     %d", l2.Epoch))
	assert.NotContains(t, out, "This host")

	require.NoError(t, srv.Restart())
	require.Eventually(t, func() bool {
		le := f.lease()
		ls := f.leaders()
		return le.Epoch >= l2.Epoch && len(ls) == 1 && ls[0] == le.Holder
	}, eTTL+fSlack+5*time.Second, 50*time.Millisecond, "one leader after etcd's restart")
	time.Sleep(2 * fRenew)
	assert.Len(t, f.leaders(), 1, "still one leader")
	f.oneHostPerGeneration()
}

// TestEtcdFrozenLeader: the leader's host frozen (SIGSTOP) past the
// session TTL: the init of its namespace stops its relay at the end of
// its term, before another leads; resumed, the old host finds its renewal
// too late, without a word to etcd, and follows.
func TestEtcdFrozenLeader(t *testing.T) {
	f, _ := newEtcdFleet(t, 3)
	f.startAll()
	l, _ := f.leaderAfter(0, 10*time.Second)
	f.settle(l.Holder, 5*time.Second)
	frozen := f.host(l.Holder)
	r, err := frozen.relay()
	require.NoError(t, err)
	oldPID := r.PID
	require.NotZero(t, oldPID)

	frozen.signal(syscall.SIGSTOP)
	froze := time.Now()
	testsupport.WaitGone(t, eTTL, oldPID)
	t.Logf("the frozen leader's relay was stopped %s after SIGSTOP (session TTL %s)", time.Since(froze).Round(time.Millisecond), eTTL)
	assert.Equal(t, l.Epoch, f.lease().Epoch, "no other host led before it was gone")
	l2, _ := f.leaderAfter(l.Epoch, eTTL+fSlack+5*time.Second)
	require.NotEqual(t, frozen.id, l2.Holder)

	frozen.signal(syscall.SIGCONT)
	require.Eventually(t, func() bool { return strings.Contains(frozen.stderr(), "renewal too late") }, fSlack+5*time.Second, 20*time.Millisecond)
	assert.Contains(t, frozen.stderr(), "renewal too late", "the term was lost without a word to etcd")
	require.Eventually(t, func() bool {
		r, err := frozen.relay()
		return err == nil && r.Role == "follower" && r.Status == string(plan.Standby) && r.Generation == l2.Epoch
	}, 5*time.Second, 20*time.Millisecond)
	assert.Equal(t, []string{l2.Holder}, f.leaders())
	f.oneHostPerGeneration()
}

// TestEtcdSoak is TestFloatingSoak on etcd, over five hosts: kills,
// freezes and graceful stops at random (GRAFT_SOAK_ROUNDS, default 3),
// and throughout, epochs strictly grow, no epoch has two holders among
// the hosts that answer, and no generation runs on two hosts.
func TestEtcdSoak(t *testing.T) {
	rounds := 3
	if s := os.Getenv("GRAFT_SOAK_ROUNDS"); s != "" {
		var err error
		rounds, err = strconv.Atoi(s)
		require.NoError(t, err)
	}
	source := uint64(time.Now().UnixNano())
	t.Logf("random source %d", source)
	rng := rand.New(rand.NewPCG(source, source))
	f, _ := newEtcdFleet(t, 5)
	f.startAll()
	l, _ := f.leaderAfter(0, 10*time.Second)
	w := watchFleet(f)
	for round := range rounds {
		l = f.soakRound(t, rng, round, l)
	}
	time.Sleep(fRenew + fPoll + 500*time.Millisecond)
	w.stop()

	require.NoError(t, w.err)
	t.Logf("epochs seen: %v", w.epochs)
	require.NotEmpty(t, w.epochs)
	for i := 1; i < len(w.epochs); i++ {
		assert.Greater(t, w.epochs[i], w.epochs[i-1], "epochs strictly increase")
	}
	for epoch, hosts := range w.claimed {
		assert.Len(t, hosts, 1, "epoch %d was led by %v", epoch, hosts)
	}
	f.oneHostPerGeneration()
	assert.Len(t, f.leaders(), 1)
}
