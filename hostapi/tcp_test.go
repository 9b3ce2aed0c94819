package hostapi

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const secret = "Bearer s3cr3t-t0ken-4242"

// recorder is a listener that keeps every byte its connections read.
type recorder struct {
	net.Listener
	mu  sync.Mutex
	got bytes.Buffer
}

func (r *recorder) Accept() (net.Conn, error) {
	c, err := r.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordedConn{Conn: c, r: r}, nil
}

func (r *recorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.got.Bytes())
}

type recordedConn struct {
	net.Conn
	r *recorder
}

func (c *recordedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.r.mu.Lock()
	c.r.got.Write(p[:n])
	c.r.mu.Unlock()
	return n, err
}

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
func serve(t *testing.T, l net.Listener, tlsToo bool) (*recorder, string) {
	t.Helper()
	rec := &recorder{Listener: l}
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
	assert.Contains(t, string(rec.bytes()), "GET /v1/status", "the first request reached it")
	assert.NotContains(t, string(rec.bytes()), "s3cr3t", "the token never left the client")
}

// TestPlainClientOfPlainHostSendsTokenAfterProbe: over plain TCP on
// loopback the token goes with every request after a first one without
// it.
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
	got := string(rec.bytes())
	assert.Equal(t, 3, bytes.Count([]byte(got), []byte("GET /v1/status")), "one first request, then the two asked for")
	assert.Equal(t, 2, bytes.Count([]byte(got), []byte("s3cr3t")), "the token went with the two asked for only")
}
