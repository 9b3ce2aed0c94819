package atomicfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	require.NoError(t, Write(path, []byte("one"), 0o600))
	require.NoError(t, Write(path, []byte("two"), 0o640))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "two", string(b))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, ents, 1, "no temporary file is left")
}

func TestWriteFailure(t *testing.T) {
	err := Write(filepath.Join(t.TempDir(), "missing", "state.json"), []byte("x"), 0o600)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing/state.json: no such file or directory")

	// The rename fails (path is a directory with something in it): what
	// was there stays, and no temporary file is left.
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	require.NoError(t, os.MkdirAll(filepath.Join(path, "keep"), 0o700))
	err = Write(path, []byte("new"), 0o600)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "write "+path+": ")
	assert.DirExists(t, filepath.Join(path, "keep"))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, ents, 1)
}

// TestWriteOverLink: a link where path goes is replaced, not followed: the
// file it points at is left as it was.
func TestWriteOverLink(t *testing.T) {
	target := filepath.Join(t.TempDir(), "passwd")
	require.NoError(t, os.WriteFile(target, []byte("root:x:0:0\n"), 0o644))
	path := filepath.Join(t.TempDir(), "applied.json")
	require.NoError(t, os.Symlink(target, path))
	require.NoError(t, Write(path, []byte("{}\n"), 0o600))
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "root:x:0:0\n", string(b))
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
}
