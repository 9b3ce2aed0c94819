//go:build linux

package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/host"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/skew"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/runtime/runtimetest"
)

// TestNewerProtocolRefused: on its socket and over TCP, a host refuses a
// request of a later protocol than its own, naming both versions, and
// does nothing of it (an apply applies nothing); a request of no
// protocol (curl, an older graft) is served as ever. Graft's client says
// its own and hears the host's.
func TestNewerProtocolRefused(t *testing.T) {
	addr := testsupport.FreeAddr(t)
	n := &netHost{dir: filepath.Join(t.TempDir(), ".graft"), addr: addr, log: runtimetest.NewRecorder()}
	var err error
	n.h, err = host.Open(n.dir, host.Options{Logger: quiet, Timing: timing, Version: "v1.2.0"})
	require.NoError(t, err)
	t.Cleanup(func() { n.h.Shutdown(context.Background()) })
	n.unix = serveWith(t, n.h, Options{TCP: TCP{Addr: "tcp://" + addr, Token: tcpToken}})
	newer := []string{skew.VersionHeader, "v1.3.0", skew.ProtocolHeader, "2", "Content-Type", "application/json"}
	const refusal = "this host runs graft v1.2.0 (protocol 1); the client is graft v1.3.0 (protocol 2), which it does not understand: run graft upgrade, or use graft v1.2.0"

	apply, err := json.Marshal(hostapi.ApplyRequest{Source: wire(t.TempDir(), twoSleeps)})
	require.NoError(t, err)
	for _, tcp := range []bool{false, true} {
		status, body := n.raw(t, tcp, true, "GET", "/v1/status", "", newer...)
		assert.Equal(t, 400, status, "tcp %v", tcp)
		var b hostapi.ErrorBody
		require.NoError(t, json.Unmarshal([]byte(body), &b), body)
		assert.Equal(t, "newer-protocol", b.Kind)
		assert.Equal(t, refusal, b.Error)

		status, body = n.raw(t, tcp, true, "POST", "/v1/apply", string(apply), newer...)
		assert.Equal(t, 400, status, "tcp %v: %s", tcp, body)
		assert.Contains(t, body, refusal)
		assert.Empty(t, n.h.Status().Plugins, "nothing was applied")

		status, _ = n.raw(t, tcp, true, "GET", "/v1/status", "")
		assert.Equal(t, 200, status, "tcp %v: a request of no protocol is served", tcp)
	}
	status, _ := n.raw(t, true, false, "GET", "/v1/status", "", newer...)
	assert.Equal(t, 401, status, "the token first")

	_, ok := n.unix.Host()
	assert.False(t, ok, "before an answer")
	_, err = n.unix.Status(context.Background())
	require.NoError(t, err)
	p, ok := n.unix.Host()
	require.True(t, ok)
	assert.Equal(t, skew.Peer{Version: "v1.2.0", Protocol: hostapi.Protocol}, p)
}
