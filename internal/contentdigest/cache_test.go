package contentdigest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
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
	// A damaged table is a miss, not a wrong digest: a bad digest, a
	// line cut short, another root's table.
	for _, bad := range []string{
		tableHeader + "root " + strconv.Quote(bin) + "\n" + statKey(fi) + " sha256:nonsense \".\"\n",
		tableHeader + "root " + strconv.Quote(bin) + "\n" + statKey(fi) + " " + want,
		tableHeader + "root \"/elsewhere\"\n" + statKey(fi) + " " + strings.Replace(want, want[7:9], "00", 1) + " \".\"\n",
	} {
		write(t, filepath.Join(cacheDir, FileName(bin)), bad)
		c := New(cacheDir)
		got, err := c.Digest(bin)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		assert.Equal(t, 1, c.Reads(), "%q", bad)
	}
	// And a good one spares the read.
	c := New(cacheDir)
	_, err = c.Digest(bin)
	require.NoError(t, err)
	assert.Equal(t, 0, c.Reads())
}

// TestTreeIsOneTable: a directory's digests are one file in the cache,
// holding only the files under it as they are now: a file rewritten or
// removed leaves no entry of its old version (before, each file version
// left a file of its own, for good).
func TestTreeIsOneTable(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	static := filepath.Join(dir, "static")
	for i := range 50 {
		write(t, filepath.Join(static, fmt.Sprintf("f%02d", i)), "v1")
	}
	c := New(cacheDir)
	d1, err := c.Digest(static)
	require.NoError(t, err)
	time.Sleep(10 * time.Millisecond) // a later ctime, on coarse clocks too
	for i := range 10 {
		write(t, filepath.Join(static, fmt.Sprintf("f%02d", i)), "v2")
	}
	require.NoError(t, os.Remove(filepath.Join(static, "f49")))
	d2, err := c.Digest(static)
	require.NoError(t, err)
	assert.NotEqual(t, d1, d2)
	assert.Equal(t, 50+10, c.Reads(), "only the changed files are read again")

	ents, err := os.ReadDir(cacheDir)
	require.NoError(t, err)
	require.Len(t, ents, 1, "one table for the tree")
	b, err := os.ReadFile(filepath.Join(cacheDir, ents[0].Name()))
	require.NoError(t, err)
	files, ok := decodeTable(string(b), static)
	require.True(t, ok)
	assert.Len(t, files, 49, "the files there now, and no old version")
	assert.NotContains(t, files, "f49")

	// Another process reads the table and nothing else.
	c2 := New(cacheDir)
	d, err := c2.Digest(static)
	require.NoError(t, err)
	assert.Equal(t, d2, d)
	assert.Equal(t, 0, c2.Reads())
}

// TestPrune: Prune keeps the tables of the roots it is told, removes the
// rest (an older graft's entries too), and waits for a Hold, giving up
// with ErrBusy rather than remove under it.
func TestPrune(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	write(t, a, "a")
	write(t, b, "b")
	write(t, filepath.Join(cacheDir, "d1-i2-s3-m4-c5"), "sha256:"+strings.Repeat("0", 64)+"\n")
	c := New(cacheDir)
	for _, p := range []string{a, b} {
		_, err := c.Digest(p)
		require.NoError(t, err)
	}
	// A Hold is a flock, which Windows has not: there a prune waits for
	// none, and the rest still holds.
	if runtime.GOOS != "windows" {
		release := New(cacheDir).Hold() // another process's parse
		assert.ErrorIs(t, c.Prune([]string{a}, 50*time.Millisecond), ErrBusy)
		assert.Len(t, c.Roots(), 2, "nothing pruned under a hold")
		release()
	}
	require.NoError(t, c.Prune([]string{a}, time.Second))
	ents, err := os.ReadDir(cacheDir)
	require.NoError(t, err)
	require.Len(t, ents, 1)
	assert.Equal(t, FileName(a), ents[0].Name())
	assert.Equal(t, []string{a}, c.Roots())

	// Holds are shared: two at once.
	r1, r2 := c.Hold(), New(cacheDir).Hold()
	r1()
	r2()
	require.NoError(t, c.Prune(nil, time.Second))
	ents, err = os.ReadDir(cacheDir)
	require.NoError(t, err)
	assert.Empty(t, ents)
}
