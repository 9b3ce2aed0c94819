//go:build linux

package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/fsfault"
)

// unsafe asserts that err is an *UnsafeError about path, whose message
// says problem and whose hint is fix.
func unsafe(t *testing.T, err error, path, problem, fix string) {
	t.Helper()
	var u *UnsafeError
	require.True(t, errors.As(err, &u), "want an *UnsafeError, got %v", err)
	assert.Equal(t, path, u.Path)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), problem)
	assert.Contains(t, u.Hint(), fix)
}

// secret is a file of this test's user that the attacks aim at.
func secret(t *testing.T) (path string, check func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(path, []byte("root's\n"), 0o644))
	return path, func() {
		t.Helper()
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "root's\n", string(b), "the file a link pointed at is untouched")
	}
}

func TestDirMakes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "state")
	require.NoError(t, Dir(dir, 0o750))
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	assert.Zero(t, fi.Mode().Perm()&^0o750)
	require.NoError(t, Dir(dir, 0o750), "again: it exists")
}

func TestDirRefuses(t *testing.T) {
	base := t.TempDir()
	t.Run("writable by its group", func(t *testing.T) {
		dir := filepath.Join(base, "group")
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, os.Chmod(dir, 0o770))
		unsafe(t, Dir(dir, 0o750), dir, "may be written by its group", "chmod go-w "+dir)
		unsafe(t, Root(dir, 0o750), dir, "may be written by its group", "chmod go-w "+dir)
	})
	t.Run("writable by others", func(t *testing.T) {
		dir := filepath.Join(base, "others")
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, os.Chmod(dir, 0o1757))
		unsafe(t, Dir(dir, 0o750), dir, "may be written by others", "chmod go-w "+dir)
	})
	t.Run("a symbolic link", func(t *testing.T) {
		target := filepath.Join(base, "target")
		require.NoError(t, os.Mkdir(target, 0o700))
		link := filepath.Join(base, "link")
		require.NoError(t, os.Symlink(target, link))
		unsafe(t, Dir(link, 0o750), link, "is a symbolic link", "rm "+link)
		unsafe(t, Check(link), link, "is a symbolic link", "rm "+link)
		require.NoError(t, Check(filepath.Join(base, "missing")))
		require.NoError(t, Check(target))
		require.NoError(t, Root(link, 0o750), "a state dir may be a link of its own user")

		require.NoError(t, os.Chmod(target, 0o777))
		unsafe(t, Root(link, 0o750), link, "may be written by its group and others", "chmod go-w "+link)
	})
	t.Run("a file", func(t *testing.T) {
		path := filepath.Join(base, "file")
		require.NoError(t, os.WriteFile(path, nil, 0o600))
		unsafe(t, Dir(path, 0o750), path, "is a regular file, where graft keeps a directory", "mv "+path+" "+path+".old")
	})
}

// TestDirOfAnotherUser: a state dir another user made, full of links to a
// file of root's, is refused, naming the path and the fix; root's file is
// untouched.
func TestDirOfAnotherUser(t *testing.T) {
	base, asNobody := fsfault.Hostile(t)
	target, check := secret(t)
	asNobody("mkdir -m 0755 state && ln -s " + target + " state/host.lock && ln -s " + base + "/state link")
	dir := filepath.Join(base, "state")
	unsafe(t, Dir(dir, 0o750), dir, "is owned by nobody (uid 65534), not by root (uid 0)", "chown -R root "+dir)
	link := filepath.Join(base, "link")
	unsafe(t, Root(link, 0o750), link, "is a symbolic link of nobody (uid 65534), not of root (uid 0)", "rm "+link)
	check()
}

func TestOpenFileRefuses(t *testing.T) {
	dir := t.TempDir()
	target, check := secret(t)
	link := filepath.Join(dir, "applied.json")
	require.NoError(t, os.Symlink(target, link))
	for _, flag := range []int{os.O_RDONLY, os.O_WRONLY | os.O_APPEND | os.O_CREATE, os.O_RDWR | os.O_CREATE | os.O_TRUNC} {
		_, err := OpenFile(link, flag, 0o600)
		unsafe(t, err, link, "is a symbolic link, not a regular file", "rm "+link)
	}
	_, err := ReadFile(link, 1<<10)
	unsafe(t, err, link, "is a symbolic link, not a regular file", "rm "+link)
	check()

	fifo := filepath.Join(dir, "api.log")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	start := time.Now()
	for _, flag := range []int{os.O_RDONLY, os.O_WRONLY | os.O_APPEND | os.O_CREATE} {
		_, err := OpenFile(fifo, flag, 0o600)
		unsafe(t, err, fifo, "is a named pipe, not a regular file", "rm "+fifo)
	}
	assert.Less(t, time.Since(start), 5*time.Second, "a named pipe without a writer does not hang the open")

	_, err = OpenFile(os.DevNull, os.O_WRONLY, 0)
	unsafe(t, err, os.DevNull, "is a device, not a regular file", "")

	// A hard link is refused for writing: it may be another's file.
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o600))
	require.NoError(t, os.Link(file, filepath.Join(dir, "second")))
	_, err = OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
	unsafe(t, err, file, "has other names", "rm "+file)
	unsafe(t, CheckFile(file), file, "has other names", "rm "+file)
	unsafe(t, CheckFile(link), link, "is a symbolic link", "rm "+link)
	unsafe(t, CheckFile(fifo), fifo, "is a named pipe", "rm "+fifo)
	b, err := ReadFile(file, 10)
	require.NoError(t, err, "reading it is harmless")
	assert.Equal(t, "x", string(b), "not truncated")
}

// TestOpenFileOfAnotherUser: a file another user owns is not written,
// even in a directory of one's own.
func TestOpenFileOfAnotherUser(t *testing.T) {
	base, asNobody := fsfault.Hostile(t)
	asNobody("echo theirs > log")
	path := filepath.Join(base, "log")
	_, err := OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	unsafe(t, err, path, "is owned by nobody (uid 65534), not by root (uid 0)", "rm "+path)
	b, err := ReadFile(path, 100)
	require.NoError(t, err)
	assert.Equal(t, "theirs\n", string(b))
}

func TestOpenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	require.NoError(t, err)
	_, err = f.WriteString("hello\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Zero(t, fi.Mode().Perm()&^0o640)

	f, err = OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("again\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	b, err := ReadFile(path, 12)
	require.NoError(t, err)
	assert.Equal(t, "hello\nagain\n", string(b))
	_, err = ReadFile(path, 11)
	assert.ErrorContains(t, err, "larger than 11 bytes")

	f, err = OpenFile(path, os.O_RDWR|os.O_TRUNC, 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	b, err = ReadFile(path, 12)
	require.NoError(t, err)
	assert.Empty(t, b, "truncated once checked")

	_, err = OpenFile(filepath.Join(path, "x"), os.O_RDONLY, 0)
	assert.ErrorIs(t, err, syscall.ENOTDIR)
	_, err = Open(filepath.Join(t.TempDir(), "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Equal(t, "uid "+strconv.Itoa(1<<30), userName(1<<30))
}
