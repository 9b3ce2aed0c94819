//go:build linux

package privsock

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/asnobody"
)

// TestPrivateDir: a missing directory is made 0700 whatever the umask;
// one of this user's, 0700, is taken; a symbolic link (even to such a
// directory), a file, and a directory open to others are refused.
func TestPrivateDir(t *testing.T) {
	base := t.TempDir()
	old := syscall.Umask(0)
	dir := filepath.Join(base, "graft")
	err := PrivateDir(dir)
	syscall.Umask(old)
	require.NoError(t, err)
	fi, err := os.Lstat(dir)
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	require.NoError(t, PrivateDir(dir), "again: it is there, and fine")

	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(dir, link))
	err = PrivateDir(link)
	var de *DirError
	require.ErrorAs(t, err, &de)
	assert.EqualError(t, err, "the socket directory "+link+" is not this user's alone: it is a symbolic link")
	assert.Contains(t, de.Hint(), "rm -r "+link)

	file := filepath.Join(base, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	assert.ErrorAs(t, PrivateDir(file), &de)
	assert.Equal(t, "it is not a directory", de.Why)

	open := filepath.Join(base, "open")
	require.NoError(t, os.Mkdir(open, 0o700))
	require.NoError(t, os.Chmod(open, 0o755))
	err = PrivateDir(open)
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "its mode is 0755: others may enter it", de.Why)
	assert.Equal(t, "chmod 700 "+open, de.Hint())
}

// TestPrivateDirOfAnotherUser: a directory another user owns (nobody, for
// real), mode 0700 or not, is refused, naming its owner.
func TestPrivateDirOfAnotherUser(t *testing.T) {
	uid := asnobody.Need(t)
	dir := filepath.Join(t.TempDir(), "graft-0")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chown(dir, uid, uid))
	err := PrivateDir(dir)
	var de *DirError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "it is owned by uid "+strconv.Itoa(uid)+", not by this user (uid 0)", de.Why)
}

// TestSocketDir: $XDG_RUNTIME_DIR/graft, shared, when it is this user's
// alone; else, and when it will not do (why is Unused), a directory made
// now in the temporary directory, graft-<uid>-<random>, mode 0700, a new
// one each time, which Remove removes.
func TestSocketDir(t *testing.T) {
	rt, tmp := t.TempDir(), t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", rt)
	t.Setenv("TMPDIR", tmp)
	d, err := SocketDir()
	require.NoError(t, err)
	assert.Equal(t, Dir{Path: filepath.Join(rt, "graft")}, d)
	d.Remove()
	assert.DirExists(t, d.Path, "a shared one stays")

	t.Setenv("XDG_RUNTIME_DIR", "")
	old := syscall.Umask(0)
	d, err = SocketDir()
	syscall.Umask(old)
	require.NoError(t, err)
	assert.True(t, d.Fresh)
	assert.NoError(t, d.Unused)
	assert.Equal(t, tmp, filepath.Dir(d.Path))
	assert.Regexp(t, "^graft-"+strconv.Itoa(os.Getuid())+"-[0-9]+$", filepath.Base(d.Path))
	fi, err := os.Lstat(d.Path)
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "whatever the umask")
	again, err := SocketDir()
	require.NoError(t, err)
	assert.NotEqual(t, d.Path, again.Path, "a new one each time")
	d.Remove()
	again.Remove()
	assert.NoDirExists(t, d.Path)
	assert.NoDirExists(t, again.Path)

	require.NoError(t, os.Remove(filepath.Join(rt, "graft")))
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(rt, "graft")))
	t.Setenv("XDG_RUNTIME_DIR", rt)
	d, err = SocketDir()
	require.NoError(t, err)
	defer d.Remove()
	assert.True(t, d.Fresh)
	assert.Equal(t, tmp, filepath.Dir(d.Path))
	var de *DirError
	require.ErrorAs(t, d.Unused, &de)
	assert.Equal(t, filepath.Join(rt, "graft"), de.Dir)
	assert.Equal(t, "it is a symbolic link", de.Why)
}

// TestSocketDirNotSquatted: graft-<uid> in the temporary directory, the
// name graft once used, made first by another user (nobody, for real)
// is not used, and does not keep graft from a socket directory.
func TestSocketDirNotSquatted(t *testing.T) {
	uid := asnobody.Need(t)
	tmp := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", tmp)
	theirs := filepath.Join(tmp, "graft-"+strconv.Itoa(os.Getuid()))
	require.NoError(t, os.Mkdir(theirs, 0o700))
	require.NoError(t, os.Chown(theirs, uid, uid))
	d, err := SocketDir()
	require.NoError(t, err)
	defer d.Remove()
	assert.NotEqual(t, theirs, d.Path)
	assert.True(t, d.Fresh)
}
