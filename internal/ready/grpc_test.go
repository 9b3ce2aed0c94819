//go:build linux

package ready

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/graftland/graft/internal/etcdtest"
	"github.com/graftland/graft/internal/health"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/launch"
)

// The grpc probe against a gRPC server nobody here wrote: etcd serves
// grpc.health.v1 on its client port.

// etcdAddr starts an etcd for t and returns the HOST:PORT of its client
// port, where its gRPC services are.
func etcdAddr(t *testing.T) string {
	t.Helper()
	return strings.TrimPrefix(etcdtest.Start(t).Endpoint(), "http://")
}

// TestGRPCReady: a grpc ready check passes once etcd answers SERVING,
// and one at a port nothing listens on fails, saying so.
func TestGRPCReady(t *testing.T) {
	addr := etcdAddr(t)
	require.NoError(t, Wait(context.Background(), readyOf(launch.Ready{Probe: launch.Probe{GRPC: addr}}), noExec, nil, nil))

	none := testsupport.FreeAddr(t)
	err := Wait(context.Background(), readyOf(launch.Ready{Probe: launch.Probe{GRPC: none}, Timeout: launch.Duration(300 * time.Millisecond)}), noExec, nil, nil)
	var nr *NotReadyError
	require.ErrorAs(t, err, &nr)
	assert.Contains(t, err.Error(), "not ready after 300 millis: grpc health "+none+": Unavailable: ")
	assert.Contains(t, err.Error(), "connection refused")
}

// TestGRPCHealth: a health check of etcd as a whole reports SERVING as
// a pass, every interval, leaving no connection or goroutine behind;
// one of a service etcd does not know fails with what etcd answers, the
// standard NotFound "unknown service" of grpc.health.v1's Check.
func TestGRPCHealth(t *testing.T) {
	addr := etcdAddr(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fds := openFDs(t)

	hc := check(10*time.Millisecond, 5*time.Second, 0)
	hc.GRPC = addr
	got := runChecks(hc, 10)
	require.Len(t, got, 10)
	for i, r := range got {
		assert.NoError(t, r.Err, "check %d", i)
	}
	assert.Eventually(t, func() bool { return openFDs(t) <= fds }, 5*time.Second, 10*time.Millisecond,
		"every check closed its connection: %d open files before, %d after", fds, openFDs(t))

	hc.Service = "x"
	got = runChecks(hc, 1)
	require.Len(t, got, 1)
	require.Error(t, got[0].Err)
	assert.Equal(t, `grpc health `+addr+` service "x": NotFound: unknown service`, got[0].Err.Error())
}

// TestGRPCDeadline: a server that takes the connection but never speaks
// gRPC fails the check at its timeout, as a TimeoutError.
func TestGRPCDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	hc := check(10*time.Millisecond, 200*time.Millisecond, 0)
	hc.GRPC = ln.Addr().String()
	began := time.Now()
	got := runChecks(hc, 1)
	require.Len(t, got, 1)
	var te *TimeoutError
	require.ErrorAs(t, got[0].Err, &te)
	assert.ErrorIs(t, got[0].Err, context.DeadlineExceeded)
	assert.Equal(t, "no answer within 200 millis: grpc health "+hc.GRPC+": context deadline exceeded", got[0].Err.Error())
	assert.Less(t, time.Since(began), 3*time.Second)
}

// runChecks runs hc's checks until n have reported, and returns them.
func runChecks(hc *launch.Health, n int) []health.Result {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []health.Result
	Health(ctx, hc, nil, func(r health.Result) {
		if got = append(got, r); len(got) == n {
			cancel()
		}
	})
	return got
}

// openFDs counts this process's open files.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}
