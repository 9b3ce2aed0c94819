//go:build unix

package dirlock

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/safefs"
)

func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	f, err := Lock(path, "")
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(os.Getpid())+"\n", string(b))

	// A second open file is refused, even in this process, and told who
	// holds it.
	_, err = Lock(path, "")
	var held *HeldError
	require.True(t, errors.As(err, &held), "%v", err)
	assert.Equal(t, os.Getpid(), held.PID)
	assert.Contains(t, err.Error(), "pid "+strconv.Itoa(os.Getpid())+" holds "+path)
	assert.Empty(t, held.Hint(), "a lock of no named holder has no command to name")

	require.NoError(t, f.Close())
	f, err = Lock(path, "")
	require.NoError(t, err)
	f.Close()
}

// TestLockRefusesLink: a lock file that is a symbolic link, to a file of
// this user, is refused, and the file it points at is left as it was.
func TestLockRefusesLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "passwd")
	require.NoError(t, os.WriteFile(target, []byte("root:x:0:0\n"), 0o644))
	path := filepath.Join(dir, "x.lock")
	require.NoError(t, os.Symlink(target, path))
	_, err := Lock(path, "")
	var unsafe *safefs.UnsafeError
	require.ErrorAs(t, err, &unsafe)
	assert.Equal(t, path, unsafe.Path)
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "root:x:0:0\n", string(b))
}
