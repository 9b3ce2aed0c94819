//go:build linux

package runner

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/skew"
	"github.com/graftland/graft/runnerapi"
)

// TestNewerProtocolRefused: a request of a later protocol than the
// runner's is refused, naming both versions, and does nothing; one of
// its own protocol, or of none (curl), is served; every answer says the
// runner's version and protocol.
func TestNewerProtocolRefused(t *testing.T) {
	h := newHarness(t, Options{Lease: short.Lease, Grace: short.Grace, Version: "v1.2.0"})
	open := func(headers ...string) (int, http.Header, string) {
		body := `{"holder": "a newer host", "leaseMillis": 2000}`
		req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/v1/sessions", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := h.srv.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header, string(b)
	}

	status, hd, body := open(skew.VersionHeader, "v1.3.0", skew.ProtocolHeader, "2")
	assert.Equal(t, http.StatusBadRequest, status)
	var e runnerapi.ErrorBody
	require.NoError(t, json.Unmarshal([]byte(body), &e))
	assert.Equal(t, "newer-protocol", e.Kind)
	assert.Equal(t, "this runner runs graft v1.2.0 (protocol 1); the client is graft v1.3.0 (protocol 2), which it does not understand: start the runner with a later graft, or use graft v1.2.0", e.Error)
	assert.Equal(t, "v1.2.0", hd.Get(skew.VersionHeader))
	assert.Empty(t, h.r.status().Sessions, "no session was opened")

	for _, headers := range [][]string{{skew.VersionHeader, "v1.1.0", skew.ProtocolHeader, "1"}, nil} {
		status, hd, body := open(headers...)
		assert.Equal(t, http.StatusOK, status, body)
		assert.Equal(t, "v1.2.0", hd.Get(skew.VersionHeader))
		assert.Equal(t, "1", hd.Get(skew.ProtocolHeader))
	}
	assert.Len(t, h.r.status().Sessions, 2)
}
