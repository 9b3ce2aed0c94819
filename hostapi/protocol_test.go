package hostapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/skew"
)

// TestClientSaysItsVersion: every request of a client carries this
// graft's version and the host API's protocol; the client hears the
// host's from its answers, and a refusal of its protocol comes back with
// the host's words.
func TestClientSaysItsVersion(t *testing.T) {
	var mu sync.Mutex
	var got []skew.Peer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := skew.Of(r.Header)
		assert.NoError(t, err, "%s %s", r.Method, r.URL)
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
		skew.Peer{Version: "v1.2.0", Protocol: 1}.Set(w.Header())
		if r.URL.Path == "/v1/plan" {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error": "this host runs graft v1.2.0 (protocol 1); the client is graft v1.3.0 (protocol 2), which it does not understand: run graft upgrade, or use graft v1.2.0", "kind": "newer-protocol"}`))
			return
		}
		w.Write([]byte(`{"host": {"pid": 1, "version": "v1.2.0"}, "plugins": []}`))
	}))
	defer srv.Close()
	c, err := NewTCPClient(TCP{Addr: "tcp://" + strings.TrimPrefix(srv.URL, "http://"), Token: "t"})
	require.NoError(t, err)
	defer c.Close()

	_, heard := c.Host()
	assert.False(t, heard)
	_, err = c.Status(context.Background())
	require.NoError(t, err)
	h, heard := c.Host()
	require.True(t, heard)
	assert.Equal(t, skew.Peer{Version: "v1.2.0", Protocol: 1}, h)

	_, err = c.Plan(context.Background(), Source{})
	assert.EqualError(t, err, "this host runs graft v1.2.0 (protocol 1); the client is graft v1.3.0 (protocol 2), which it does not understand: run graft upgrade, or use graft v1.2.0")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 2, "the status, the plan (Go's server answers the plain-HTTP probe, OPTIONS *, itself)")
	for _, p := range got {
		assert.Equal(t, skew.Peer{Version: skew.Version(), Protocol: Protocol}, p)
	}
}
