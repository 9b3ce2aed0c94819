//go:build linux

package local

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/etcdtest"
	"github.com/graftland/graft/internal/health"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// TestGRPCChecks: a local plugin's grpc ready and health checks run
// against a real gRPC server's standard health service (etcd's, on its
// client port): the plugin becomes ready and healthy; a check of a
// service etcd does not know fails with what etcd answers, its ready
// check failing the start and its health check saying why in the state.
func TestGRPCChecks(t *testing.T) {
	addr := strings.TrimPrefix(etcdtest.Start(t).Endpoint(), "http://")
	l := newLocal(t, short)

	p := helper("api", "cooperative")
	p.Ready = &spec.Ready{Probe: launch.Probe{GRPC: addr}, Timeout: spec.FromStd(10 * time.Second)}
	p.Health = &spec.Health{Probe: launch.Probe{GRPC: addr}, Interval: spec.FromStd(50 * time.Millisecond), Timeout: spec.FromStd(5 * time.Second), Failures: 3}
	s := runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: &stamps{}}.For(p))
	require.NoError(t, s.Start(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.Await(ctx, spec.UntilHealthy))
	st := s.State()
	assert.Equal(t, runtime.Running, st.Status)
	assert.Equal(t, health.Healthy, st.Health)
	assert.Empty(t, st.HealthError)
	_, err := s.Stop(context.Background())
	require.NoError(t, err)

	p = helper("api", "cooperative")
	p.Health = &spec.Health{Probe: launch.Probe{GRPC: addr, Service: "x"}, Interval: spec.FromStd(50 * time.Millisecond), Timeout: spec.FromStd(5 * time.Second), Failures: 1000}
	s = runtime.NewSupervisor(l, runtime.Request{Dir: t.TempDir(), Output: &stamps{}}.For(p))
	require.NoError(t, s.Start(context.Background()))
	st = waitState(t, s, 10*time.Second, func(st runtime.State) bool { return st.HealthError != "" })
	assert.Equal(t, health.Starting, st.Health, "no check has passed")
	assert.Equal(t, `grpc health `+addr+` service "x": NotFound: unknown service`, st.HealthError)
	_, err = s.Stop(context.Background())
	require.NoError(t, err)

	p = helper("api", "cooperative")
	p.Ready = &spec.Ready{Probe: launch.Probe{GRPC: addr, Service: "nope"}, Timeout: spec.FromStd(time.Second)}
	_, err = l.Start(context.Background(), runtime.Request{Dir: t.TempDir(), Output: runtimetest.NewRecorder()}.For(p))
	var se *runtime.StartError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), `start api: not ready after 1 second: grpc health `+addr+` service "nope": NotFound: unknown service`)
	assert.True(t, se.Exit.Requested, "the plugin was stopped")
}
