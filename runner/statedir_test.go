//go:build linux

package runner

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/fsfault"
	"github.com/graftland/graft/internal/safefs"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func requireUnsafe(t *testing.T, err error, path, problem, fix string) {
	t.Helper()
	var u *safefs.UnsafeError
	require.True(t, errors.As(err, &u), "want an *safefs.UnsafeError, got %v", err)
	assert.Equal(t, path, u.Path)
	assert.Contains(t, err.Error(), problem)
	assert.Contains(t, u.Hint(), fix)
}

// TestHostileStateDir: a runner refuses a state dir another user made,
// with links to a file of root's where its files go, naming the dir and
// the fix, and leaves the file as it was; and one of its own whose
// subdirectory is a link, or whose files are.
func TestHostileStateDir(t *testing.T) {
	base, asNobody := fsfault.Hostile(t)
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("root's"), 0o644))
	asNobody("mkdir -m 0755 state state/generations && ln -s " + victim + " state/runner.lock && ln -s " + victim + " state/generations/a")
	state := filepath.Join(base, "state")
	_, err := Open(state, Options{Logger: quietLog})
	requireUnsafe(t, err, state, "is owned by nobody (uid 65534), not by root (uid 0)", "chown -R root "+state)

	mine := t.TempDir()
	asNobody("mkdir -m 0755 records")
	require.NoError(t, os.Symlink(filepath.Join(base, "records"), filepath.Join(mine, "records")))
	_, err = Open(mine, Options{Logger: quietLog})
	requireUnsafe(t, err, filepath.Join(mine, "records"), "is a symbolic link", "rm "+filepath.Join(mine, "records"))

	require.NoError(t, os.Remove(filepath.Join(mine, "records")))
	require.NoError(t, os.Remove(filepath.Join(mine, lockFile)))
	require.NoError(t, os.Symlink(victim, filepath.Join(mine, lockFile)))
	_, err = Open(mine, Options{Logger: quietLog})
	requireUnsafe(t, err, filepath.Join(mine, lockFile), "is a symbolic link", "rm "+filepath.Join(mine, lockFile))

	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "root's", string(b))
}

// TestLinkedGeneration: a generation file of the old layout that is a
// link is not read as the instance's generation: the runner refuses the
// state dir, naming it and the fix, and leaves it as it was; so does a
// link where the journal goes.
func TestLinkedGeneration(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("41\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, generationsDir), 0o700))
	linked := filepath.Join(dir, generationsDir, "linked")
	require.NoError(t, os.Symlink(victim, linked))
	_, err := Open(dir, Options{Logger: quietLog})
	requireUnsafe(t, err, linked, "is a symbolic link", "rm "+linked)
	_, err = os.Lstat(linked)
	require.NoError(t, err, "the old layout is left as it was")

	require.NoError(t, os.RemoveAll(filepath.Join(dir, generationsDir)))
	require.NoError(t, os.Symlink(victim, journalPath(dir)))
	_, err = Open(dir, Options{Logger: quietLog})
	requireUnsafe(t, err, journalPath(dir), "is a symbolic link", "rm "+journalPath(dir))
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "41\n", string(b))
}
