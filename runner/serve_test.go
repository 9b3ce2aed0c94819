//go:build linux

package runner

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/runtime/runtimetest"
)

// TestServe: Serve answers on its listener until its ctx ends, then
// stops every process, ends, and removes its unix socket.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	log := runtimetest.NewRecorder()
	r, err := Open(filepath.Join(dir, "state"), Options{Lease: 2 * time.Second, Grace: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(log, nil))})
	require.NoError(t, err)
	sock := filepath.Join(dir, "r.sock")
	ln, err := ListenConfig{Addr: "unix://" + sock}.Listen()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- r.Serve(ctx, ln, "unix://"+sock, nil) }()

	c := unixClient(t, sock)
	sess := c.open(0)
	ev := c.events(sess)
	st := c.start("s.one", plugin(t, sess, "cooperative"))
	ev.ready(t)
	ev.close()
	assert.Len(t, c.status().Instances, 1)
	c.hc.CloseIdleConnections()

	cancel()
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not end with its ctx")
	}
	testsupport.WaitGone(t, 5*time.Second, st.PID)
	_, err = os.Stat(sock)
	assert.True(t, os.IsNotExist(err), "the socket is removed")
	assert.Contains(t, log.String(), `msg="runner listening" listen=unix://`+sock+` tls=false client-certificates=false token=false`)
	assert.Contains(t, log.String(), "stopping every process")
}
