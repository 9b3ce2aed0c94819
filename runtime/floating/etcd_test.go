//go:build linux

package floating

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/elect/etcd"
	"github.com/graftland/graft/internal/etcdtest"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/local"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// The etcd tests' durations: a session TTL that holds 2 × renew and the
// stop windows of fast (elect.MinTTL); the test server grants one-second
// leases.
const (
	etcdTTL   = time.Second
	etcdRenew = 150 * time.Millisecond
)

// etcdFleet starts n hosts' relays, elected on srv, at once.
func etcdFleet(t *testing.T, srv *etcdtest.Server, n int) []*fhost {
	hosts := make([]*fhost, n)
	var wg sync.WaitGroup
	for i := range hosts {
		f := &fhost{id: string(rune('a' + i)), clock: newFreezable(elect.Skewed(0)), addr: testsupport.FreeAddr(t)}
		inner := local.New(local.Options{Timing: fast})
		t.Cleanup(func() { assert.NoError(t, inner.Close()) })
		f.p = New(inner, Options{HostID: f.id, Clock: f.clock, Timing: fast, Etcd: etcd.New})
		t.Cleanup(func() { assert.NoError(t, f.p.Close()) })
		hosts[i] = f
		p := plugin("relay", "", f.addr, "listen", "0s", f.addr)
		p.Elect = &spec.Elect{Address: f.addr, Renew: spec.FromStd(etcdRenew), Poll: spec.FromStd(fencePoll),
			Etcd: &spec.Etcd{Endpoints: []string{srv.Endpoint()}, Prefix: "/graft-test/", SessionTTL: spec.FromStd(etcdTTL)}}
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

// etcdLeader waits until one host leads past epoch after and runs its
// relay, and returns it with the relay's process and its generation.
func etcdLeader(t *testing.T, hosts []*fhost, after int64) (*fhost, int, int64) {
	t.Helper()
	var leader *fhost
	var pid int
	var gen int64
	require.Eventually(t, func() bool {
		for _, f := range hosts {
			if st := f.state(); st.Role == string(Leading) && st.Status == runtime.Running && st.PID != 0 && st.Identity.Generation > after {
				leader, pid, gen = f, st.PID, st.Identity.Generation
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond, "a leader past epoch %d runs its relay", after)
	return leader, pid, gen
}

// firstKey is the create revision and value of the candidates' first key,
// read from etcd as another program would.
func firstKey(t *testing.T, srv *etcdtest.Server) (int64, string) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, DialTimeout: 2 * time.Second})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "/graft-test/relay/", clientv3.WithFirstCreate()...)
	require.NoError(t, err)
	require.NotEmpty(t, resp.Kvs)
	return resp.Kvs[0].CreateRevision, string(resp.Kvs[0].Value)
}

// TestEtcdElection: three hosts elect one leader on a real etcd; its
// relay runs with the leader key's create revision as its generation,
// and the others stand by with its address. etcd stopped: the leader's
// relay is gone before the session TTL has passed since etcd went away,
// which is before any other host could lead. etcd back with its data:
// one leader again, of a later epoch.
func TestEtcdElection(t *testing.T) {
	srv := etcdtest.Start(t)
	hosts := etcdFleet(t, srv, 3)
	leader, pid, gen := etcdLeader(t, hosts, 0)
	rev, val := firstKey(t, srv)
	assert.Equal(t, rev, gen, "the generation is the key's create revision")
	assert.Contains(t, val, leader.addr)
	require.Eventually(t, func() bool {
		for _, f := range hosts {
			if st := f.state(); f != leader && (st.Role != string(Following) || st.Status != runtime.Standby || st.Address != leader.addr || st.Identity.Generation != gen) {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "the others follow %s", leader.id)
	assert.Equal(t, []string{leader.id}, leaders(hosts))
	assert.Equal(t, "etcd", leader.state().Backend)

	stopped := time.Now()
	srv.Stop()
	gone := testsupport.WaitGone(t, etcdTTL+slack, pid)
	t.Logf("the relay was gone %s after etcd stopped (session ttl %s)", gone.Sub(stopped), etcdTTL)
	assert.Less(t, gone.Sub(stopped), etcdTTL, "gone before the session could have expired")

	require.NoError(t, srv.Restart())
	again, _, gen2 := etcdLeader(t, hosts, gen)
	t.Logf("after etcd's restart, %s leads epoch %d", again.id, gen2)
	time.Sleep(2 * etcdRenew)
	assert.Equal(t, []string{again.id}, leaders(hosts), "one leader after etcd's restart")
}

// TestEtcdConfig: the spec's elect.etcd as the backend gets it: paths
// resolved against the spec's directory, the password read from its file
// without its newline, and a missing password file named.
func TestEtcdConfig(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pw"), []byte("s3cret\n"), 0o600))
	p := plugin("relay", "", "10.0.0.7:80", "listen")
	p.Elect = &spec.Elect{Address: "10.0.0.7:80", Renew: spec.FromStd(time.Second), Etcd: &spec.Etcd{
		Endpoints: []string{"https://10.0.0.5:2379"}, Prefix: "/p/", SessionTTL: spec.FromStd(9 * time.Second),
		TLS:      &spec.EtcdTLS{CA: "ca.pem", Cert: "/abs/host.pem", Key: "host.key"},
		Username: "graft", PasswordFile: "pw"}}
	req := runtime.Request{Dir: dir}.For(p)
	cfg, err := EtcdConfig(req, "10.0.0.7:80")
	require.NoError(t, err)
	assert.Equal(t, elect.EtcdConfig{Endpoints: []string{"https://10.0.0.5:2379"}, Prefix: "/p/", Instance: "relay",
		Address: "10.0.0.7:80", SessionTTL: 9 * time.Second, Renew: time.Second,
		CA: filepath.Join(dir, "ca.pem"), Cert: "/abs/host.pem", Key: filepath.Join(dir, "host.key"),
		Username: "graft", Password: "s3cret"}, cfg)

	p.Elect.Etcd.PasswordFile = "missing"
	_, err = EtcdConfig(req, "10.0.0.7:80")
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "missing"))

	// A placement without an etcd opener refuses such a plugin.
	inner := local.New(local.Options{Timing: fast})
	defer inner.Close()
	fp := New(inner, Options{HostID: "a", Timing: fast})
	defer fp.Close()
	_, err = fp.Start(context.Background(), req)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot elect on etcd")
}
