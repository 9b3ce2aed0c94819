package cleartext

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestLoopback: only localhost and loopback IPs are loopback alone; every
// interface, a LAN address and any other name are not. Connections beyond
// loopback are refused in the tests of the daemons and their clients,
// inside network namespaces of their own (hostapi, runtime/remote,
// runner).
func TestLoopback(t *testing.T) {
	for hostname, want := range map[string]bool{
		"localhost": true, "127.0.0.1": true, "127.9.9.9": true, "::1": true,
		"": false, "0.0.0.0": false, "::": false, "10.1.2.3": false, "example.com": false, "localhost.": false,
	} {
		assert.Equal(t, want, Loopback(hostname), "%q", hostname)
	}
}

// TestLoopbackOnlyPassesLoopback: a connection to a loopback far end is
// kept, and refuse is not called.
func TestLoopbackOnlyPassesLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	dial := LoopbackOnly(nil, func(string) error { t.Error("refused a loopback far end"); return errors.New("refused") })
	c, err := dial(context.Background(), "tcp", ln.Addr().String())
	require.NoError(t, err)
	c.Close()
}

// TestProbe: the probe is OPTIONS *, without a token, which net/http's
// server answers itself: the handler never sees it. It is made once; a
// probe that got no answer is made again by the next Do.
func TestProbe(t *testing.T) {
	var handled atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled.Add(1) }))
	defer srv.Close()
	var p Probe

	down := &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no route")
	}}}
	require.ErrorContains(t, p.Do(context.Background(), down, srv.URL), "no route")
	require.NoError(t, p.Do(context.Background(), srv.Client(), srv.URL))
	require.NoError(t, p.Do(context.Background(), down, srv.URL), "made once: no request")
	assert.Zero(t, handled.Load(), "the server answered it itself")
	var none *Probe
	assert.NoError(t, none.Do(context.Background(), down, srv.URL))
}

// TestProbeOfTLSServer: a server that serves TLS answers the probe with
// its 400, which is ErrServesTLS.
func TestProbeOfTLSServer(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // a plain request to TLS is logged
	srv.StartTLS()
	defer srv.Close()
	var p Probe
	err := p.Do(context.Background(), &http.Client{}, strings.Replace(srv.URL, "https://", "http://", 1))
	assert.ErrorIs(t, err, ErrServesTLS)
	assert.True(t, TLSAnswer(http.StatusBadRequest, []byte("Client sent an HTTP request to an HTTPS server.\n")))
	assert.False(t, TLSAnswer(http.StatusBadRequest, []byte(`{"error":"bad"}`)))
}
