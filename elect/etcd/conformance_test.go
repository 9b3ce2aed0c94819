package etcd

import (
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/elect/electtest"
	"github.com/graftland/graft/internal/etcdtest"
)

// The package tests run on a real etcd server (Debian's etcd-server),
// started by each test on loopback ports of its own; its short heartbeats
// let it grant one-second leases.
const (
	testTTL   = time.Second
	testRenew = 200 * time.Millisecond
	// kitRenew is the conformance kit's: also how long a resign may take,
	// which etcd's fsyncs passed at 200 ms on a loaded machine.
	kitRenew = 400 * time.Millisecond
)

// elections numbers the elections of a server, so each test case has a
// prefix of its own.
var elections atomic.Int64

// kit joins hosts to elections on srv, each election under a prefix of
// its own.
func kit(srv *etcdtest.Server) func(t *testing.T) func(string) elect.Backend {
	return func(t *testing.T) func(string) elect.Backend {
		prefix := fmt.Sprintf("/graft-test/%d/", elections.Add(1))
		return func(host string) elect.Backend {
			return joinRenewing(t, srv, prefix, host, kitRenew)
		}
	}
}

// join is host's part in the election under prefix on srv, closed when t
// ends; its address is a name, not a listener: etcd does not probe it.
func join(t *testing.T, srv *etcdtest.Server, prefix, host string) *Election {
	return joinRenewing(t, srv, prefix, host, testRenew)
}

// joinRenewing is join with a renew of its own.
func joinRenewing(t *testing.T, srv *etcdtest.Server, prefix, host string, renew time.Duration) *Election {
	e, err := Open(elect.EtcdConfig{Endpoints: []string{srv.Endpoint()}, Prefix: prefix,
		Instance: "conformance", HostID: host, Address: net.JoinHostPort(strings.ToLower(host)+".test", "80"),
		SessionTTL: testTTL, Renew: renew})
	require.NoError(t, err)
	t.Cleanup(e.Close)
	return e
}

func TestConformance(t *testing.T) {
	srv := etcdtest.Start(t)
	electtest.Run(t, electtest.Kit{TTL: testTTL, Handover: 100 * time.Millisecond, Election: kit(srv)})
}
