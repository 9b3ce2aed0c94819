//go:build linux

package runner

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/skew"
	"github.com/graftland/graft/internal/statedir"
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

	newer := strconv.Itoa(runnerapi.Protocol + 1)
	status, hd, body := open(skew.VersionHeader, "v1.3.0", skew.ProtocolHeader, newer)
	assert.Equal(t, http.StatusBadRequest, status)
	var e runnerapi.ErrorBody
	require.NoError(t, json.Unmarshal([]byte(body), &e))
	assert.Equal(t, "newer-protocol", e.Kind)
	assert.Equal(t, fmt.Sprintf("this runner runs graft v1.2.0 (protocol %d); the client is graft v1.3.0 (protocol %s), which it does not understand: start the runner with a later graft, or use graft v1.2.0", runnerapi.Protocol, newer), e.Error)
	assert.Equal(t, "v1.2.0", hd.Get(skew.VersionHeader))
	assert.Empty(t, h.r.status().Sessions, "no session was opened")

	for _, headers := range [][]string{{skew.VersionHeader, "v1.1.0", skew.ProtocolHeader, "1"}, nil} {
		status, hd, body := open(headers...)
		assert.Equal(t, http.StatusOK, status, body)
		assert.Equal(t, "v1.2.0", hd.Get(skew.VersionHeader))
		assert.Equal(t, strconv.Itoa(runnerapi.Protocol), hd.Get(skew.ProtocolHeader))
	}
	assert.Len(t, h.r.status().Sessions, 2)
}

// TestStateDirStamped: a runner stamps its state dir, and refuses one a
// newer graft stamped with a later format, naming the dir, both versions
// and the fix, before it reads its journal.
func TestStateDirStamped(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(dir, Options{Logger: quietLog, Version: "v1.2.0"})
	require.NoError(t, err)
	require.NoError(t, r.Close())
	b, err := os.ReadFile(filepath.Join(dir, statedir.FormatFile))
	require.NoError(t, err)
	assert.JSONEq(t, `{"format": 1, "version": "v1.2.0"}`, string(b))

	newer := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(newer, statedir.FormatFile), []byte(`{"format": 2, "version": "v1.3.0"}`), 0o600))
	_, err = Open(newer, Options{Logger: quietLog, Version: "v1.2.0"})
	var refused *statedir.NewerError
	require.ErrorAs(t, err, &refused)
	assert.EqualError(t, err, "the state dir "+newer+" is in format 2, written by graft v1.3.0; this graft v1.2.0 reads format 1 at most, and would misread it")
	assert.NoFileExists(t, filepath.Join(newer, journalFile), "the journal is not touched")
}
