package etcd

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/internal/etcdtest"
)

// TestEpochIsCreateRevision: the term's epoch is its key's create
// revision, as etcd itself reports it, and a follower reads the same.
func TestEpochIsCreateRevision(t *testing.T) {
	srv := etcdtest.Start(t)
	a, b := join(t, srv, "/rev/", "h1"), join(t, srv, "/rev/", "h2")
	term, err := a.Campaign(t.Context())
	require.NoError(t, err)
	defer term.Close()

	c, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, DialTimeout: 2 * time.Second})
	require.NoError(t, err)
	defer c.Close()
	resp, err := c.Get(t.Context(), "/rev/conformance/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	assert.Equal(t, resp.Kvs[0].CreateRevision, term.Epoch())
	l, _, err := b.Leader(t.Context())
	require.NoError(t, err)
	assert.Equal(t, elect.Lease{Holder: "h1", Address: "h1.test:80", Epoch: term.Epoch()}, l)
}

// TestLostBeforeDeadline: etcd gone, the leader's term is lost within two
// renewals of its last, before its Deadline, which is when etcd could
// have expired its lease; it writes nothing more. etcd back with its data:
// an observer that read through the outage sees the next leader, and the
// epoch grew.
func TestLostBeforeDeadline(t *testing.T) {
	srv := etcdtest.Start(t)
	a, b := join(t, srv, "/lost/", "h1"), join(t, srv, "/lost/", "h2")
	term, err := a.Campaign(t.Context())
	require.NoError(t, err)
	obs := b.Observe(t.Context())
	first := <-obs
	require.Equal(t, term.Epoch(), first.Lease.Epoch)

	srv.Stop()
	var lostAt time.Time
	select {
	case <-term.Lost():
		lostAt = time.Now()
	case <-time.After(testTTL + 2*time.Second):
		t.Fatal("the term outlived etcd")
	}
	deadline := term.Deadline()
	t.Logf("lost %s before the deadline: %v", deadline.Sub(lostAt), term.Err())
	assert.True(t, lostAt.Before(deadline), "lost before the session could expire")
	assert.ErrorIs(t, term.Resign(t.Context()), elect.ErrNotLeader)

	require.NoError(t, srv.Restart())
	next, err := b.Campaign(t.Context())
	require.NoError(t, err)
	defer next.Close()
	assert.Greater(t, next.Epoch(), term.Epoch())
	timeout := time.After(5 * time.Second)
	for {
		select {
		case o := <-obs:
			if !o.Dead && o.Lease.Epoch == next.Epoch() {
				assert.Equal(t, "h2", o.Lease.Holder)
				return
			}
		case <-timeout:
			t.Fatal("the observer did not see the leader after etcd's restart")
		}
	}
}

// TestConfig: what Open refuses, and why.
func TestConfig(t *testing.T) {
	good := elect.EtcdConfig{Endpoints: []string{"http://127.0.0.1:1"}, Instance: "i", HostID: "h", Address: "a:1"}
	for name, c := range map[string]struct {
		mod  func(*elect.EtcdConfig)
		want string
	}{
		"no endpoints":   {func(c *elect.EtcdConfig) { c.Endpoints = nil }, "Endpoints: empty"},
		"fractional ttl": {func(c *elect.EtcdConfig) { c.SessionTTL = 1500 * time.Millisecond }, "not whole seconds"},
		"renew too long": {func(c *elect.EtcdConfig) { c.SessionTTL, c.Renew = time.Second, time.Second }, "shorter than SessionTTL"},
		"no time to stop": {func(c *elect.EtcdConfig) {
			c.SessionTTL, c.Renew, c.StopBudget = 10*time.Second, 3*time.Second, 7*time.Second
		},
			"leaves no time to stop the plugin"},
		"missing CA": {func(c *elect.EtcdConfig) { c.CA = filepath.Join(t.TempDir(), "ca.pem") }, "ca.pem"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := good
			c.mod(&cfg)
			_, err := Open(cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	e, err := Open(good)
	require.NoError(t, err)
	e.Close()
}

// TestResume: a term whose program executed another (graft upgrade) is
// taken back on etcd by the next, with the same epoch, lease and key,
// before the candidate in line may lead; one whose lease expired is not.
func TestResume(t *testing.T) {
	srv := etcdtest.Start(t)
	old, b := join(t, srv, "/resume/", "h1"), join(t, srv, "/resume/", "h2")
	term, err := old.Campaign(t.Context())
	require.NoError(t, err)
	epoch, renewed, handover := term.Epoch(), term.Renewed(), term.Handover()
	term.Close() // the exec: nothing renews, nothing is revoked
	old.Close()
	inLine := make(chan elect.Leadership, 1)
	go func() {
		l, _ := b.Campaign(t.Context())
		inLine <- l
	}()

	next := join(t, srv, "/resume/", "h1")
	back, err := next.Resume(t.Context(), epoch, renewed, handover)
	require.NoError(t, err)
	assert.Equal(t, epoch, back.Epoch(), "the same epoch")
	assert.Equal(t, handover, back.Handover(), "the same lease and key")
	time.Sleep(2 * testTTL) // past the lease of the old program's last keepalive
	select {
	case <-back.Lost():
		t.Fatalf("the term taken back was lost: %v", back.Err())
	case l := <-inLine:
		t.Fatalf("the candidate in line led, epoch %d", l.Epoch())
	default:
	}
	l, _, err := b.Leader(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "h1", l.Holder)
	assert.Equal(t, epoch, l.Epoch)

	// Resigned, the key is gone: the candidate leads, and a later try to
	// take the old term back fails.
	require.NoError(t, back.Resign(t.Context()))
	select {
	case l := <-inLine:
		require.NotNil(t, l)
		assert.Greater(t, l.Epoch(), epoch)
		l.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the candidate did not lead once the term was resigned")
	}
	_, err = join(t, srv, "/resume/", "h1").Resume(t.Context(), epoch, time.Now(), handover)
	assert.ErrorIs(t, err, elect.ErrNotResumable)
}
