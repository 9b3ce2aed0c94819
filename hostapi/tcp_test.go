package hostapi

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
)

const secret = "Bearer s3cr3t-t0ken-4242"

// tokenHost answers as a host's TCP listener does: 401 without the
// token, its status with it.
var tokenHost = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != secret {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.Write([]byte(`{}`))
})

// serve starts a server of tokenHost on l, recorded; tlsToo serves TLS.
func serve(t *testing.T, l net.Listener, tlsToo bool) (*testsupport.Recorder, string) {
	t.Helper()
	rec := testsupport.Record(l)
	s := httptest.NewUnstartedServer(tokenHost)
	s.Listener.Close()
	s.Listener = rec
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // a plain request to TLS is logged
	if tlsToo {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return rec, "tcp://" + l.Addr().String()
}

// TestPlainClientOfTLSHostSendsNoToken: a client without TLS flags,
// talking to a host that serves TLS, is told so, and its token never
// left it: its first request carries none.
func TestPlainClientOfTLSHostSendsNoToken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rec, addr := serve(t, l, true)

	c, err := NewTCPClient(TCP{Addr: addr, Token: secret[len("Bearer "):]})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Status(context.Background())
	var tlsErr *TLSRequiredError
	require.ErrorAs(t, err, &tlsErr)
	assert.Contains(t, err.Error(), "--tls-ca")
	assert.Contains(t, string(rec.Bytes()), "OPTIONS * HTTP/1.1", "the first request reached it")
	assert.NotContains(t, string(rec.Bytes()), "s3cr3t", "the token never left the client")
}

// TestPlainClientOfPlainHostSendsTokenAfterProbe: over plain TCP on
// loopback the token goes with every request after a first one without
// it, OPTIONS *, which the server answers itself: the host's handlers
// never see it, and log no refusal.
func TestPlainClientOfPlainHostSendsTokenAfterProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rec, addr := serve(t, l, false)

	c, err := NewTCPClient(TCP{Addr: addr, Token: secret[len("Bearer "):]})
	require.NoError(t, err)
	defer c.Close()
	for range 2 {
		_, err = c.Status(context.Background())
		require.NoError(t, err)
	}
	got := string(rec.Bytes())
	assert.Equal(t, 1, bytes.Count([]byte(got), []byte("OPTIONS * HTTP/1.1")), "one first request")
	assert.Equal(t, 2, bytes.Count([]byte(got), []byte("GET /v1/status")), "then the two asked for")
	assert.Equal(t, 2, bytes.Count([]byte(got), []byte("s3cr3t")), "the token went with the two asked for only")
}
