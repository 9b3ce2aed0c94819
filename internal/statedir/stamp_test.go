//go:build linux

package statedir

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/graftland/graft/internal/fsfault"
	"github.com/graftland/graft/internal/safefs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var v120 = Format{Format: 1, Version: "v1.2.0"}

func logTo(b *bytes.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// TestStampWritten: a state dir without a stamp gets this graft's; one
// with a stamp of the same format keeps it as it is, whichever graft
// wrote it: nothing is written.
func TestStampWritten(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	require.NoError(t, Stamp(dir, v120, logTo(&log)))
	path := filepath.Join(dir, FormatFile)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, `{"format":1,"version":"v1.2.0"}`+"\n", string(b))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	require.NoError(t, Stamp(dir, Format{Format: 1, Version: "v1.3.0"}, logTo(&log)))
	again, err := os.Stat(path)
	require.NoError(t, err)
	assert.True(t, os.SameFile(fi, again), "not written again")
	b2, _ := os.ReadFile(path)
	assert.Equal(t, string(b), string(b2))
	assert.Empty(t, log.String())
}

// TestStampNewer: a state dir of a later format is refused, naming it,
// both versions and the fix, and left as it is.
func TestStampNewer(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FormatFile)
	stamp := `{"format": 2, "version": "v1.3.0", "more": "a field of a later graft"}`
	require.NoError(t, os.WriteFile(path, []byte(stamp), 0o600))
	err := Stamp(dir, v120, logTo(&bytes.Buffer{}))
	var newer *NewerError
	require.ErrorAs(t, err, &newer)
	assert.Equal(t, Format{Format: 2, Version: "v1.3.0"}, newer.Found)
	assert.EqualError(t, err, "the state dir "+dir+" is in format 2, written by graft v1.3.0; this graft v1.2.0 reads format 1 at most, and would misread it")
	assert.Equal(t, "use graft v1.3.0 or later with this state dir (graft upgrade brings a host there), or give this graft another one (--state-dir DIR)", newer.Hint())
	b, _ := os.ReadFile(path)
	assert.Equal(t, stamp, string(b))

	require.NoError(t, os.WriteFile(path, []byte(`{"format": 3}`), 0o600))
	assert.ErrorContains(t, Stamp(dir, v120, logTo(&bytes.Buffer{})), "written by graft (unknown version)")
}

// TestStampEarlier: a dir of an earlier format is stamped with the later
// one; when that write fails the dir is refused, as the daemon would
// change it without its stamp saying so. A dir already of this format
// whose stamp cannot be written (a full disk, a read-only one) opens,
// and the failure is logged.
func TestStampEarlier(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, Stamp(dir, v120, logTo(&bytes.Buffer{})))
	v2 := Format{Format: 2, Version: "v2.0.0"}
	require.NoError(t, Stamp(dir, v2, logTo(&bytes.Buffer{})))
	b, _ := os.ReadFile(filepath.Join(dir, FormatFile))
	assert.Equal(t, `{"format":2,"version":"v2.0.0"}`+"\n", string(b))

	older := t.TempDir()
	require.NoError(t, Stamp(older, v120, logTo(&bytes.Buffer{})))
	fsfault.ReadOnly(t, older)
	assert.ErrorContains(t, Stamp(older, v2, logTo(&bytes.Buffer{})), "stamp the state dir: write "+filepath.Join(older, FormatFile))

	unstamped := t.TempDir()
	fsfault.ReadOnly(t, unstamped)
	var log bytes.Buffer
	require.NoError(t, Stamp(unstamped, v120, logTo(&log)))
	assert.Contains(t, log.String(), "the state dir's stamp could not be written")
}

// TestStampDamaged: a stamp that cannot be parsed is written afresh, as
// host-id is; a link or a named pipe where it goes is refused, naming it.
func TestStampDamaged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FormatFile)
	for _, damaged := range []string{"", "{", `{"format": "2"}`, `{"format": 0}`, "null"} {
		require.NoError(t, os.WriteFile(path, []byte(damaged), 0o600))
		var log bytes.Buffer
		require.NoError(t, Stamp(dir, v120, logTo(&log)), "%q", damaged)
		b, _ := os.ReadFile(path)
		assert.Equal(t, `{"format":1,"version":"v1.2.0"}`+"\n", string(b), "%q", damaged)
		assert.Contains(t, log.String(), "cannot be read", "%q", damaged)
	}

	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), path))
	var unsafe *safefs.UnsafeError
	require.ErrorAs(t, Stamp(dir, v120, logTo(&bytes.Buffer{})), &unsafe)
	assert.Equal(t, "rm "+path, unsafe.Hint())
}
