//go:build linux

package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/guard"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/internal/tlsconf"
	"github.com/graftland/graft/runnerapi"
)

// TestTCPFlood: a runner serving TLS with client certificates on
// loopback (docs/security.md#listeners) still serves a host with the
// certificate and the token, within a bound, after clients without the
// token held kept-alive connections (each 401 closes its connection),
// after 300 connections that never send a byte (evicted), and while its
// sessions' event streams are at their limit (the next is refused 429).
func TestTCPFlood(t *testing.T) {
	dir := t.TempDir()
	testsupport.WriteCerts(t, dir)
	conf, err := TLSConfig(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), filepath.Join(dir, "ca.pem"))
	require.NoError(t, err)
	cconf, err := tlsconf.Client(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key"))
	require.NoError(t, err)

	lim := guard.Limits{MaxConns: 4, MaxUnauthenticated: 4, MaxStreams: 2, AuthTimeout: time.Minute}
	opt := short
	opt.Token, opt.Limits, opt.Logger = "runner-token", lim, slog.New(slog.DiscardHandler)
	r, err := Open(t.TempDir(), opt)
	require.NoError(t, err)
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := tln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- r.Serve(ctx, guard.Listener(tln, lim), "tcp://"+addr, conf) }()
	defer func() {
		cancel()
		assert.NoError(t, <-served)
	}()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conns = append(conns, c)
		return c
	}
	host := newClient(t, "https://"+addr, opt.Token, &http.Client{Transport: &http.Transport{TLSClientConfig: cconf, DisableKeepAlives: true}, Timeout: 3 * time.Second})
	servedWithin := func(what string) {
		t.Helper()
		start := time.Now()
		status, _, err := host.try("GET", "/v1/status", nil, nil)
		require.NoError(t, err, "%s: the host is locked out", what)
		assert.Equal(t, http.StatusOK, status, what)
		assert.Less(t, time.Since(start), 3*time.Second, what)
	}

	for range 2 * lim.MaxConns {
		tr := &http.Transport{TLSClientConfig: cconf}
		resp, err := (&http.Client{Transport: tr, Timeout: 3 * time.Second}).Get("https://" + addr + "/v1/status")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		assert.True(t, resp.Close, "a 401 closes its connection")
		tr.CloseIdleConnections()
	}
	servedWithin("after tokenless kept-alive requests")

	for range 300 {
		dial()
	}
	servedWithin("after connections that send nothing")

	streams := &http.Client{Transport: &http.Transport{TLSClientConfig: cconf}}
	hostStreams := newClient(t, "https://"+addr, opt.Token, streams)
	for range lim.MaxStreams {
		hostStreams.events(hostStreams.open(0))
	}
	sess := host.open(0)
	req, err := http.NewRequest("GET", "https://"+addr+"/v1/sessions/"+sess+"/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+opt.Token)
	resp, err := host.hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body runnerapi.ErrorBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, fmt.Sprintf("the runner refused the stream: it serves at most %d streams at once on this listener (sessions' event streams)", lim.MaxStreams), body.Error)
	servedWithin("while the event streams are at their limit")
}
