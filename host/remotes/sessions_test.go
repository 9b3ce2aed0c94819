package remotes

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSessionsRecord: the record of the sessions is written whole at each
// change, read back by the next host, and gone once it holds none.
func TestSessionsRecord(t *testing.T) {
	dir := t.TempDir()
	s, err := loadSessions(dir)
	require.NoError(t, err)
	require.NoError(t, s.set("box", "unix:///r.sock", "s1"))
	require.NoError(t, s.set("far", "tcp://10.0.0.2:7000", "s2"))
	require.NoError(t, s.set("box", "unix:///r.sock", "s3"))

	again, err := loadSessions(dir)
	require.NoError(t, err)
	assert.Equal(t, "s3", again.get("box", "unix:///r.sock"))
	assert.Equal(t, "s2", again.get("far", "tcp://10.0.0.2:7000"))
	assert.Empty(t, again.get("far", "tcp://10.0.0.3:7000"), "another address is another runner")

	require.NoError(t, again.keep(map[string]bool{runnerKey("far", "tcp://10.0.0.2:7000"): true}))
	require.NoError(t, again.set("far", "tcp://10.0.0.2:7000", ""))
	_, err = os.Stat(filepath.Join(dir, SessionsFile))
	assert.ErrorIs(t, err, os.ErrNotExist)

	require.NoError(t, os.WriteFile(filepath.Join(dir, SessionsFile), []byte("{"), 0o600))
	damaged, err := loadSessions(dir)
	assert.Error(t, err, "a damaged record is reported")
	assert.Empty(t, damaged.get("box", "unix:///r.sock"))
}
