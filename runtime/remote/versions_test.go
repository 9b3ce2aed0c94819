//go:build linux

package remote

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/internal/skew"
	"github.com/graftland/graft/runner"
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
)

// TestRequestsSayTheVersion: every request a host sends its runner (the
// session, its renewals and events, a start, a stop, its end) carries
// this graft's version and the runner API's protocol.
func TestRequestsSayTheVersion(t *testing.T) {
	rn, err := runner.Open(t.TempDir(), runner.Options{Lease: lease, Grace: grace, Token: testToken, Logger: testLogger(t)})
	require.NoError(t, err)
	var mu sync.Mutex
	peers := map[string][]skew.Peer{} // by path
	handler := rn.Handler()
	srv := guard.Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := skew.Of(r.Header)
		assert.NoError(t, err, "%s %s", r.Method, r.URL.Path)
		mu.Lock()
		peers[r.Method+" "+r.URL.Path] = append(peers[r.Method+" "+r.URL.Path], p)
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}), guard.Limits{}, testLogger(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	defer func() {
		assert.NoError(t, rn.Close())
		srv.Close()
		<-served
	}()

	r := newRemote(t, "tcp://"+ln.Addr().String(), nil)
	out := runtimetest.NewRecorder()
	h, err := r.Start(context.Background(), runtime.Request{Project: "shop", Output: out}.For(helper("api", "cooperative")))
	require.NoError(t, err)
	require.True(t, out.WaitFor("ready", 10*time.Second))
	time.Sleep(lease / 2) // a renewal
	_, err = h.Stop(context.Background())
	require.NoError(t, err)
	require.NoError(t, r.Close())

	mu.Lock()
	defer mu.Unlock()
	want := skew.Peer{Version: skew.Version(), Protocol: runnerapi.Protocol}
	var paths []string
	for path, ps := range peers {
		paths = append(paths, path)
		for _, p := range ps {
			assert.Equal(t, want, p, path)
		}
	}
	for _, path := range []string{"POST /v1/sessions", "POST /v1/instances/shop.api/start", "POST /v1/instances/shop.api/stop"} {
		assert.Contains(t, paths, path)
	}
	assert.GreaterOrEqual(t, len(paths), 6, "renewals, events and the session's end too: %q", paths)
}
