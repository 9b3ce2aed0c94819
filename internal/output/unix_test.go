//go:build linux

package output

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/safefs"
)

// TestRefusesOthers: a link, a named pipe or a device where the log goes
// is refused, not written or read, and the file a link points at is left
// as it was.
func TestRefusesOthers(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "passwd")
	require.NoError(t, os.WriteFile(target, []byte("root:x:0:0\n"), 0o644))
	link := filepath.Join(dir, "api.log")
	require.NoError(t, os.Symlink(target, link))
	fifo := filepath.Join(dir, "web.log")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	for _, path := range []string{link, fifo, os.DevNull} {
		_, err := Open(path, Options{})
		var unsafe *safefs.UnsafeError
		require.ErrorAs(t, err, &unsafe, path)
		assert.Equal(t, path, unsafe.Path)
		_, err = LastOf(path, Options{}, 10)
		require.ErrorAs(t, err, &unsafe, path)
	}
	// A rotated file that is a link is refused too.
	l, path := openLog(t, Options{})
	write(t, l, "a\n")
	require.NoError(t, os.Symlink(target, path+".2"))
	_, err := l.Last(5)
	assert.ErrorContains(t, err, path+".2")
	assert.Equal(t, "root:x:0:0\n", readFile(t, target))
}

// TestDirOfOthers: a log's directory that others may write is refused; one
// that is a link of the log's own user, to a directory of its own, is not.
func TestDirOfOthers(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	require.NoError(t, os.Mkdir(open, 0o700))
	require.NoError(t, os.Chmod(open, 0o777))
	_, err := Open(filepath.Join(open, "api.log"), Options{})
	var unsafe *safefs.UnsafeError
	require.ErrorAs(t, err, &unsafe)
	assert.Equal(t, open, unsafe.Path)

	require.NoError(t, os.Chmod(open, 0o750))
	require.NoError(t, os.Symlink(open, filepath.Join(dir, "link")))
	l, err := Open(filepath.Join(dir, "link", "api.log"), Options{})
	require.NoError(t, err)
	write(t, l, "a\n")
	require.NoError(t, l.Close())
	assert.Equal(t, "a\n", readFile(t, filepath.Join(open, "api.log")))
}
