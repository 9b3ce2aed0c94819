package contentdigest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func write(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}

func TestFileIsReadOnceWhileUnchanged(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	bin := filepath.Join(dir, "api")
	write(t, bin, "version 1")
	c := New(cacheDir)
	d1, err := c.Digest(bin)
	require.NoError(t, err)
	for range 100 {
		d, err := c.Digest(bin)
		require.NoError(t, err)
		assert.Equal(t, d1, d)
	}
	assert.Equal(t, 1, c.Reads(), "one binary shared by many plugins is read once")

	// Another process (a new Cache on the same directory) reads nothing.
	c2 := New(cacheDir)
	d, err := c2.Digest(bin)
	require.NoError(t, err)
	assert.Equal(t, d1, d)
	assert.Equal(t, 0, c2.Reads(), "the state dir's cache spares the read")

	// Rebuilt at the same path, same size, mtime put back: ctime and
	// inode still tell.
	fi, err := os.Stat(bin)
	require.NoError(t, err)
	require.NoError(t, os.Remove(bin))
	write(t, bin, "version 2")
	require.NoError(t, os.Chtimes(bin, fi.ModTime(), fi.ModTime()))
	d2, err := c2.Digest(bin)
	require.NoError(t, err)
	assert.NotEqual(t, d1, d2)
	assert.Equal(t, 1, c2.Reads())
}

func TestRewrittenInPlace(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "api")
	write(t, bin, "aaaa")
	c := New("")
	d1, err := c.Digest(bin)
	require.NoError(t, err)
	time.Sleep(10 * time.Millisecond) // a later ctime, on coarse clocks too
	require.NoError(t, os.WriteFile(bin, []byte("bbbb"), 0o644))
	d2, err := c.Digest(bin)
	require.NoError(t, err)
	assert.NotEqual(t, d1, d2)
}

func TestDirectoryTree(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "static", "index.html"), "hello")
	write(t, filepath.Join(dir, "static", "css", "a.css"), "body{}")
	c := New("")
	d1, err := c.Digest(filepath.Join(dir, "static"))
	require.NoError(t, err)

	write(t, filepath.Join(dir, "static", "css", "a.css"), "body{color:red}")
	d2, err := c.Digest(filepath.Join(dir, "static"))
	require.NoError(t, err)
	assert.NotEqual(t, d1, d2, "a change deep in the tree changes the digest")

	require.NoError(t, os.Rename(filepath.Join(dir, "static", "css", "a.css"), filepath.Join(dir, "static", "css", "b.css")))
	d3, err := c.Digest(filepath.Join(dir, "static"))
	require.NoError(t, err)
	assert.NotEqual(t, d2, d3, "a rename changes the digest")
}

// TestFile: File digests a regular file as Digest does, and refuses a
// directory.
func TestFile(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "static", "index.html"), "hello")
	c := New("")
	want, err := c.Digest(filepath.Join(dir, "static", "index.html"))
	require.NoError(t, err)
	got, err := c.File(filepath.Join(dir, "static", "index.html"))
	require.NoError(t, err)
	assert.Equal(t, want, got)
	_, err = c.File(filepath.Join(dir, "static"))
	assert.ErrorContains(t, err, "not a regular file")
}

func TestMissingAndCorrupt(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	_, err := New(cacheDir).Digest(filepath.Join(dir, "nothing"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	bin := filepath.Join(dir, "api")
	write(t, bin, "x")
	want, err := New("").Digest(bin)
	require.NoError(t, err)
	fi, err := os.Stat(bin)
	require.NoError(t, err)
	// A damaged cache entry is a miss, not a wrong digest.
	write(t, filepath.Join(cacheDir, statKey(fi)), "sha256:nonsense")
	c := New(cacheDir)
	got, err := c.Digest(bin)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, 1, c.Reads())
}
