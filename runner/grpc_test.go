//go:build linux

package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/etcdtest"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runnerapi"
)

// TestGRPCChecks: grpc ready and health checks reach the runner in a
// start request and run on its machine against a real gRPC server's
// standard health service (etcd's, on its client port): the start
// answers once the ready check passes, and the session hears each health
// check as an event: passing for etcd as a whole, failing, with what
// etcd answers, for a service etcd does not know.
func TestGRPCChecks(t *testing.T) {
	addr := strings.TrimPrefix(etcdtest.Start(t).Endpoint(), "http://")
	h := newHarness(t, short)
	sess := h.open(0)
	ev := h.events(sess)
	check := func(service string) *launch.Health {
		return &launch.Health{Probe: launch.Probe{GRPC: addr, Service: service},
			Interval: launch.Duration(50 * time.Millisecond), Timeout: launch.Duration(5 * time.Second)}
	}

	req := plugin(t, sess, "cooperative")
	req.Ready = &launch.Ready{Probe: launch.Probe{GRPC: addr}, Timeout: launch.Duration(10 * time.Second)}
	req.Health = check("")
	assert.Equal(t, int64(1), h.start("serving", req).Generation)
	req = plugin(t, sess, "cooperative")
	req.Health = check("x")
	h.start("unknown", req)

	seen := map[string]*runnerapi.HealthResult{}
	ev.until(t, 10*time.Second, func(e runnerapi.Event) bool {
		if e.Type == runnerapi.EventHealth && seen[e.Instance] == nil {
			seen[e.Instance] = e.Health
		}
		return len(seen) == 2
	})
	require.NotNil(t, seen["serving"])
	assert.True(t, seen["serving"].OK, "%+v", seen["serving"])
	assert.Empty(t, seen["serving"].Error)
	require.NotNil(t, seen["unknown"])
	assert.False(t, seen["unknown"].OK)
	assert.Equal(t, `grpc health `+addr+` service "x": NotFound: unknown service`, seen["unknown"].Error)
}
