package guard

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/skew"
)

// send sends a GET with the given headers and returns the answer's
// status, headers and body.
func send(t *testing.T, url string, headers ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(b)
}

// TestVersions: a daemon's answers to requests that passed the token carry
// its version and protocol; a request of a later protocol is refused,
// naming both versions, and never reaches the handler; one of its own or
// an earlier protocol, or of none (curl), is served.
func TestVersions(t *testing.T) {
	self := skew.Peer{Version: "v1.2.0", Protocol: 1}
	s := serve(t, Config{Daemon: "host", Token: testToken, Self: self, Upgrade: "run graft upgrade"}, echo)
	auth := []string{"Authorization", "Bearer " + testToken}
	peer := func(v string, p string) []string {
		return append([]string{skew.VersionHeader, v, skew.ProtocolHeader, p}, auth...)
	}

	status, h, body := send(t, s.url+"/v1/x", peer("v1.3.0", "2")...)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, KindNewer, kindOf(t, body))
	assert.Contains(t, body, "this host runs graft v1.2.0 (protocol 1); the client is graft v1.3.0 (protocol 2), which it does not understand: run graft upgrade, or use graft v1.2.0")
	assert.Equal(t, "v1.2.0", h.Get(skew.VersionHeader), "the refusal says the daemon's version")
	assert.Equal(t, "1", h.Get(skew.ProtocolHeader))
	assert.Zero(t, s.runs.Load(), "the handler ran")
	assert.Contains(t, s.log.String(), "refused a request of protocol 2, later than its own, 1")

	for _, headers := range [][]string{peer("v1.2.0", "1"), peer("v1.1.0", "1"), peer("", "1"), auth} {
		status, h, _ := send(t, s.url+"/v1/x", headers...)
		assert.Equal(t, http.StatusOK, status, "%q", headers)
		assert.Equal(t, "v1.2.0", h.Get(skew.VersionHeader), "%q", headers)
		assert.Equal(t, "1", h.Get(skew.ProtocolHeader), "%q", headers)
	}
	assert.EqualValues(t, 4, s.runs.Load())

	for _, p := range []string{"x", "0", "-1", "1.5"} {
		status, _, body := send(t, s.url+"/v1/x", peer("v1.3.0", p)...)
		assert.Equal(t, http.StatusBadRequest, status, p)
		assert.Equal(t, KindBadRequest, kindOf(t, body), p)
		assert.Contains(t, body, "Graft-Protocol: want one number from 1", p)
	}

	// Who has no token learns nothing of the daemon.
	status, h, _ = send(t, s.url+"/v1/x", skew.ProtocolHeader, "2")
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Empty(t, h.Values(skew.VersionHeader))
	assert.Empty(t, h.Values(skew.ProtocolHeader))
}

// TestNoVersions: a guard without a protocol of its own says none and
// refuses none.
func TestNoVersions(t *testing.T) {
	s := serve(t, Config{}, echo)
	status, h, _ := send(t, s.url+"/v1/x", skew.ProtocolHeader, "9")
	assert.Equal(t, http.StatusOK, status)
	assert.Empty(t, h.Values(skew.ProtocolHeader))
}
