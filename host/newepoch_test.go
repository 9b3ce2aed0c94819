//go:build linux

package host

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/instance"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/runtime"
)

// TestNewEpochSameAddress: hosts that all publish one elect.address (a
// virtual IP, a DNS name) restart their consumers at every new epoch,
// though the address stays the same: the process behind it is a new one.
// The consumers see the epoch in GRAFT_EPOCH_<PLUGIN>.
func TestNewEpochSameAddress(t *testing.T) {
	root := t.TempDir()
	shared := filepath.Join(root, "elect")
	require.NoError(t, os.Mkdir(shared, 0o755))
	// The one address every host publishes; it answers, as a virtual IP
	// in front of the leader would.
	vip, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer vip.Close()
	yaml := fmt.Sprintf(`name: fleet
plugins:
  relay:
    run: floating
    command: [sleep, '60']
    elect: {dir: %q, address: %q, ttl: 8 seconds, renew: 400 millis, poll: 250 millis, lockStale: 1500 millis}
  client:
    command: [sleep, '60']
    uses: [relay]
`, shared, vip.Addr().String())

	hosts := map[string]*Host{}
	for _, id := range []string{"h1", "h2"} {
		dir := filepath.Join(root, id)
		h, err := Open(filepath.Join(dir, ".graft"), Options{Logger: quiet, HostID: id,
			Timing: runtime.Timing{ShutdownTimeout: time.Second, ExitWindow: 100 * time.Millisecond, KillAfter: 100 * time.Millisecond}})
		require.NoError(t, err)
		defer h.Shutdown(context.Background())
		_, err = h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, yaml)}, Report{})
		require.NoError(t, err, id)
		hosts[id] = h
	}
	require.Equal(t, "1", clientEnv(hosts["h2"])[instance.EnvEpoch("relay")], "the consumer sees the first epoch")
	before := pluginStatus(hosts["h2"], "client").Instance

	// h1 leads (it applied first) and leaves: h2 takes over at the same
	// address, with epoch 2, and restarts its consumer.
	require.Equal(t, "leader", pluginStatus(hosts["h1"], "relay").Role)
	require.NoError(t, hosts["h1"].Shutdown(context.Background()))
	require.Eventually(t, func() bool {
		env := clientEnv(hosts["h2"])
		st := pluginStatus(hosts["h2"], "client")
		return env[instance.EnvEpoch("relay")] == "2" && st != nil && st.Status == "running"
	}, 15*time.Second, 20*time.Millisecond, "the consumer was not restarted for the new epoch")
	assert.Equal(t, vip.Addr().String(), clientEnv(hosts["h2"])[instance.EnvAddr("relay")], "the address did not change")
	assert.NotEqual(t, before, pluginStatus(hosts["h2"], "client").Instance, "a new process")
}

// clientEnv is what h gave its plugin client of graft's own variables.
func clientEnv(h *Host) map[string]string {
	e := h.entry("client")
	if e == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return e.env
}
