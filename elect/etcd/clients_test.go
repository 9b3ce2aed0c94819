package etcd

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/internal/etcdtest"
)

// TestSharedClient: a process's elections on one cluster share one
// client; one closed leaves the other's working, and the last closed
// closes it.
func TestSharedClient(t *testing.T) {
	srv := etcdtest.Start(t)
	a, b := join(t, srv, "/shared/", "h1"), join(t, srv, "/shared/", "h2")
	require.Same(t, a.client, b.client)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	term, err := a.Campaign(ctx)
	require.NoError(t, err)
	defer term.Close()
	a.Close()
	l, _, err := b.Leader(ctx)
	require.NoError(t, err, "the other election's client still works")
	assert.Equal(t, "h1", l.Holder)
	b.Close()
	clients.Lock()
	defer clients.Unlock()
	assert.Empty(t, clients.m, "the last election closed gives the client up")
}

// TestRetryAfter: a failed attempt waits renew, doubled with each failure
// in a row up to 4 × renew, plus a spread under renew that differs from
// host to host.
func TestRetryAfter(t *testing.T) {
	renew := time.Second
	e := func(host string) *Election {
		return &Election{cfg: elect.EtcdConfig{HostID: host, Instance: "fleet.p1", Renew: renew}}
	}
	h1 := e("h1")
	spread := h1.retryAfter(0) - renew
	assert.True(t, spread >= 0 && spread < renew, "spread %s", spread)
	assert.Equal(t, 2*renew+spread, h1.retryAfter(1))
	assert.Equal(t, 4*renew+spread, h1.retryAfter(2))
	assert.Equal(t, 4*renew+spread, h1.retryAfter(9), "no more than 4 × renew")
	waits := map[time.Duration]bool{}
	for _, h := range []string{"h1", "h2", "h3", "h4", "h5"} {
		waits[e(h).retryAfter(0)] = true
	}
	assert.Greater(t, len(waits), 1, "hosts come back at different moments")
}
