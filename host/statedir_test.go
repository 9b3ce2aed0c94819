//go:build linux

package host

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/fsfault"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/plan"
)

// TestHostileStateDir: a state dir another user made, with links to a
// file of root's where the host's files go, is refused before anything
// is written: the error names the dir and the fix. So is a state dir of
// root's that others may write, and one whose subdirectory is a link or
// another user's.
func TestHostileStateDir(t *testing.T) {
	base, asNobody := fsfault.Hostile(t)
	target, check := testsupport.Victim(t)
	asNobody(`mkdir -m 0755 state && cd state && mkdir logs instances &&
		for f in host.lock applied.json host.log host-id logs/api.log; do ln -s ` + target + ` $f; done`)
	state := filepath.Join(base, "state")
	_, err := Open(state, Options{Logger: quiet})
	testsupport.UnsafePath(t, err, state, "is owned by nobody (uid 65534), not by root (uid 0)", "chown -R root "+state)
	err = StartBackground(os.Args[0], state, time.Second)
	testsupport.UnsafePath(t, err, state, "is owned by nobody", "chown -R root "+state)
	check()

	mine := filepath.Join(base, "mine")
	require.NoError(t, os.Mkdir(mine, 0o700))
	require.NoError(t, os.Chmod(mine, 0o777))
	_, err = Open(mine, Options{Logger: quiet})
	testsupport.UnsafePath(t, err, mine, "may be written by its group and others", "chmod go-w "+mine)

	require.NoError(t, os.Chmod(mine, 0o750))
	asNobody("mkdir -m 0755 elsewhere")
	require.NoError(t, os.Symlink(filepath.Join(base, "elsewhere"), filepath.Join(mine, "logs")))
	_, err = Open(mine, Options{Logger: quiet})
	logs := filepath.Join(mine, "logs")
	testsupport.UnsafePath(t, err, logs, "is a symbolic link, where graft keeps a directory", "rm "+logs)

	require.NoError(t, os.Remove(logs))
	require.NoError(t, os.Mkdir(filepath.Join(mine, "runner"), 0o700))
	require.NoError(t, os.Chown(filepath.Join(mine, "runner"), 65534, 65534))
	_, err = Open(mine, Options{Logger: quiet})
	runner := filepath.Join(mine, "runner")
	testsupport.UnsafePath(t, err, runner, "is owned by nobody", "chown -R root "+runner)
}

// TestLinksInStateDir: in a state dir of the host's own, a link where one
// of its files goes is refused, not followed: the file it points at is
// never written. (Such links are left when a hostile dir is chowned.)
func TestLinksInStateDir(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	target, check := testsupport.Victim(t)
	require.NoError(t, os.MkdirAll(filepath.Join(state, "logs"), 0o750))

	lock := filepath.Join(state, lockFile)
	require.NoError(t, os.Symlink(target, lock))
	_, err := Open(state, Options{Logger: quiet})
	testsupport.UnsafePath(t, err, lock, "is a symbolic link, not a regular file", "rm "+lock)
	require.NoError(t, os.Remove(lock))

	stamp := filepath.Join(state, statedir.FormatFile)
	require.NoError(t, os.Symlink(target, stamp))
	_, err = Open(state, Options{Logger: quiet})
	testsupport.UnsafePath(t, err, stamp, "is a symbolic link, not a regular file", "rm "+stamp)
	require.NoError(t, os.Remove(stamp))

	id := filepath.Join(state, hostIDFile)
	require.NoError(t, os.Symlink(target, id))
	_, err = Open(state, Options{Logger: quiet})
	testsupport.UnsafePath(t, err, id, "is a symbolic link, not a regular file", "rm "+id)
	require.NoError(t, os.Remove(id))

	// A link where applied.json goes is a kept spec that cannot be read;
	// the next apply replaces the link, not the file.
	appliedPath := filepath.Join(state, appliedFile)
	require.NoError(t, os.Symlink(target, appliedPath))
	api := filepath.Join(state, "logs", "api.log")
	require.NoError(t, os.Symlink(target, api))
	h := open(t, state)
	defer h.Shutdown(context.Background())
	err = h.Reapply(context.Background())
	var kept *KeptSpecError
	require.ErrorAs(t, err, &kept)
	testsupport.UnsafePath(t, err, appliedPath, "is a symbolic link", "rm "+appliedPath)

	_, err = h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, "name: shop\nplugins:\n  api: {command: [sleep, '60']}\n")}, Report{})
	testsupport.UnsafePath(t, err, api, "is a symbolic link", "rm "+api)
	fi, err := os.Lstat(appliedPath)
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "applied.json is a file of its own now")
	check()
}

// TestKeptSpecReplaced: an apply replaces a corrupt kept spec.
func TestKeptSpecReplaced(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	require.NoError(t, os.MkdirAll(state, 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(state, appliedFile), []byte("garbage"), 0o600))
	h := open(t, state)
	_, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, twoSleeps)}, Report{})
	require.NoError(t, err)
	require.NoError(t, h.Shutdown(context.Background()))

	h = open(t, state)
	require.NoError(t, h.Reapply(context.Background()))
	assert.Equal(t, map[string]plan.Status{"db": plan.Running, "api": plan.Running}, statuses(h))
	require.NoError(t, h.Shutdown(context.Background()))
}

// TestStartUpWritesNothing: a host started again on its state dir, and
// its reapply of the same spec, rewrite none of the files it already has.
func TestStartUpWritesNothing(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	h := open(t, state)
	_, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, twoSleeps)}, Report{})
	require.NoError(t, err)
	require.NoError(t, h.Shutdown(context.Background()))

	files := []string{appliedFile, hostIDFile, statedir.FormatFile, "logs/db.log", "logs/api.log"}
	before := map[string]os.FileInfo{}
	for _, f := range files {
		fi, err := os.Stat(filepath.Join(state, f))
		require.NoError(t, err, f)
		before[f] = fi
	}
	time.Sleep(20 * time.Millisecond) // past the file system's timestamp granularity
	h = open(t, state)
	require.NoError(t, h.Reapply(context.Background()))
	require.NoError(t, h.Shutdown(context.Background()))
	for _, f := range files {
		fi, err := os.Stat(filepath.Join(state, f))
		require.NoError(t, err)
		assert.True(t, os.SameFile(before[f], fi), "%s is the same file", f)
		assert.Equal(t, before[f].ModTime(), fi.ModTime(), "%s is not written again", f)
	}

	// A changed spec is written.
	h = open(t, state)
	defer h.Shutdown(context.Background())
	_, err = h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, "name: shop\nplugins:\n  db: {command: [sleep, '61']}\n")}, Report{})
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(state, appliedFile))
	require.NoError(t, err)
	assert.False(t, os.SameFile(before[appliedFile], fi), "a new spec is a new file")
}

// TestLinkedStateDir: a state dir may be a link of the host's own user to
// a directory of its own.
func TestLinkedStateDir(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	require.NoError(t, os.Mkdir(real, 0o700))
	link := filepath.Join(dir, ".graft")
	require.NoError(t, os.Symlink(real, link))
	h := open(t, link)
	_, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, twoSleeps)}, Report{})
	require.NoError(t, err)
	require.NoError(t, h.Shutdown(context.Background()))
	assert.FileExists(t, filepath.Join(real, appliedFile))
	assert.FileExists(t, filepath.Join(real, "logs", "db.log"))
}

// TestStateDirStamped: a host stamps its state dir with its format and
// version, and refuses one a newer graft stamped with a later format,
// naming the dir, both versions and the fix, before it reads or writes
// anything else there.
func TestStateDirStamped(t *testing.T) {
	state := filepath.Join(t.TempDir(), ".graft")
	h, err := Open(state, Options{Logger: quiet, Version: "v1.2.0"})
	require.NoError(t, err)
	require.NoError(t, h.Shutdown(context.Background()))
	b, err := os.ReadFile(filepath.Join(state, statedir.FormatFile))
	require.NoError(t, err)
	assert.JSONEq(t, `{"format": 1, "version": "v1.2.0"}`, string(b))

	newer := filepath.Join(t.TempDir(), ".graft")
	require.NoError(t, os.MkdirAll(newer, 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(newer, statedir.FormatFile), []byte(`{"format": 2, "version": "v1.3.0"}`), 0o600))
	_, err = Open(newer, Options{Logger: quiet, Version: "v1.2.0"})
	var refused *statedir.NewerError
	require.ErrorAs(t, err, &refused)
	assert.EqualError(t, err, "the state dir "+newer+" is in format 2, written by graft v1.3.0; this graft v1.2.0 reads format 1 at most, and would misread it")
	assert.NoFileExists(t, filepath.Join(newer, hostIDFile), "nothing is written")
	assert.NoFileExists(t, filepath.Join(newer, statedir.DigestKey), "nothing is written")

	// The refusal released the lock: with a stamp of a format this graft
	// reads, whoever wrote it, the dir opens.
	require.NoError(t, os.WriteFile(filepath.Join(newer, statedir.FormatFile), []byte(`{"format": 1, "version": "v1.3.0"}`), 0o600))
	h, err = Open(newer, Options{Logger: quiet, Version: "v1.2.0"})
	require.NoError(t, err)
	require.NoError(t, h.Shutdown(context.Background()))
}
