package output

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openLog opens a log in a directory Open must create.
func openLog(t *testing.T, opt Options) (*Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "logs", "api.log")
	l, err := Open(path, opt)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l, path
}

func write(t *testing.T, l *Log, chunks ...string) {
	t.Helper()
	for _, c := range chunks {
		n, err := l.Write([]byte(c))
		require.NoError(t, err)
		require.Equal(t, len(c), n)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestOpenCreates(t *testing.T) {
	_, path := openLog(t, Options{})
	dir, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	assert.Zero(t, dir.Mode().Perm()&^0o750, "directory mode %v", dir.Mode())
	file, err := os.Stat(path)
	require.NoError(t, err)
	assert.Zero(t, file.Mode().Perm()&^0o640, "file mode %v", file.Mode())
}

func TestWriteTail(t *testing.T) {
	t.Run("partial lines", func(t *testing.T) {
		l, path := openLog(t, Options{})
		assert.Empty(t, l.Tail())
		write(t, l, "one\ntw")
		assert.Equal(t, []string{"one", "tw"}, l.Tail())
		write(t, l, "o\n", "", "\n")
		assert.Equal(t, []string{"one", "two", ""}, l.Tail())
		assert.Equal(t, "one\ntwo\n\n", readFile(t, path), "the file gets the bytes as written")
	})
	t.Run("TailLines bound", func(t *testing.T) {
		l, _ := openLog(t, Options{TailLines: 3})
		for i := range 10 {
			write(t, l, fmt.Sprintf("l%d\n", i))
		}
		assert.Equal(t, []string{"l7", "l8", "l9"}, l.Tail())
		write(t, l, "part")
		assert.Equal(t, []string{"l8", "l9", "part"}, l.Tail())
	})
	t.Run("long lines cut", func(t *testing.T) {
		l, path := openLog(t, Options{})
		exact := strings.Repeat("e", maxLine)
		long := strings.Repeat("x", 2*maxLine+5)
		write(t, l, exact+"\n", long[:1000], long[1000:]+"\n")
		assert.Equal(t, []string{exact, long[:maxLine], long[maxLine : 2*maxLine], long[2*maxLine:]}, l.Tail())
		assert.Equal(t, exact+"\n"+long+"\n", readFile(t, path))
	})
	t.Run("no newline does not grow memory", func(t *testing.T) {
		l, _ := openLog(t, Options{TailLines: 2})
		chunk := strings.Repeat("y", 1000)
		for range 10 * maxLine / len(chunk) {
			write(t, l, chunk)
			require.LessOrEqual(t, len(l.partial), maxLine)
		}
		for _, line := range l.Tail() {
			assert.LessOrEqual(t, len(line), maxLine)
		}
	})
	t.Run("write after close", func(t *testing.T) {
		l, _ := openLog(t, Options{})
		write(t, l, "a")
		require.NoError(t, l.Close())
		require.NoError(t, l.Close(), "Close is idempotent")
		_, err := l.Write([]byte("b\n"))
		require.ErrorIs(t, err, os.ErrClosed)
		assert.Equal(t, []string{"a"}, l.Tail())
	})
}

func TestRotation(t *testing.T) {
	t.Run("sizes, keep and order", func(t *testing.T) {
		l, path := openLog(t, Options{MaxSize: 100, Keep: 2})
		var all strings.Builder
		for i := range 50 {
			line := fmt.Sprintf("line %02d\n", i) // 8 bytes: 12 writes to a file
			all.WriteString(line)
			write(t, l, line)
		}
		var kept string
		for _, name := range []string{path + ".2", path + ".1", path} {
			b := readFile(t, name)
			assert.LessOrEqual(t, len(b), 100, name)
			kept += b
		}
		assert.NoFileExists(t, path+".3")
		assert.Len(t, kept, (12+12+2)*8, "the oldest files were dropped")
		assert.True(t, strings.HasSuffix(all.String(), kept), "content kept in order across files")
	})
	t.Run("oversized write goes whole into a fresh file", func(t *testing.T) {
		l, path := openLog(t, Options{MaxSize: 10, Keep: 3})
		big := strings.Repeat("b", 29) + "\n"
		write(t, l, big) // into the empty file: no rotation first
		assert.Equal(t, big, readFile(t, path))
		assert.NoFileExists(t, path+".1")
		write(t, l, "abc\n", big, "z\n")
		assert.Equal(t, "z\n", readFile(t, path))
		assert.Equal(t, big, readFile(t, path+".1"))
		assert.Equal(t, "abc\n", readFile(t, path+".2"))
		assert.Equal(t, big, readFile(t, path+".3"))
	})
	t.Run("reopen appends and counts the size", func(t *testing.T) {
		l, path := openLog(t, Options{})
		write(t, l, "a\nb\n")
		require.NoError(t, l.Close())

		l, err := Open(path, Options{MaxSize: 10})
		require.NoError(t, err)
		defer l.Close()
		write(t, l, "cccc\n") // 4+5 bytes: fits
		assert.NoFileExists(t, path+".1")
		write(t, l, "dd\n") // 9+3 bytes: rotates
		assert.Equal(t, "a\nb\ncccc\n", readFile(t, path+".1"))
		assert.Equal(t, "dd\n", readFile(t, path))
		assert.Equal(t, []string{"cccc", "dd"}, l.Tail(), "Tail starts at Open")
	})
	t.Run("reopen ends an unfinished line", func(t *testing.T) {
		l, path := openLog(t, Options{})
		write(t, l, "a\nkilled mid-li")
		require.NoError(t, l.Close())

		l, err := Open(path, Options{})
		require.NoError(t, err)
		defer l.Close()
		write(t, l, "next run\n")
		assert.Equal(t, "a\nkilled mid-li\nnext run\n", readFile(t, path))
	})
	t.Run("failed rotation", func(t *testing.T) {
		l, path := openLog(t, Options{MaxSize: 10, Keep: 1})
		// A non-empty directory where path.1 goes makes the rename fail.
		require.NoError(t, os.MkdirAll(filepath.Join(path+".1", "x"), 0o750))
		write(t, l, "12345\n")
		n, err := l.Write([]byte("67890\n"))
		require.Error(t, err)
		assert.Equal(t, 6, n)
		assert.Equal(t, []string{"12345", "67890"}, l.Tail(), "Tail still gets the lines")
		assert.Equal(t, "12345\n", readFile(t, path))

		require.NoError(t, os.RemoveAll(path+".1"))
		write(t, l, "abcde\n") // reopens path and rotates it
		assert.Equal(t, "12345\n", readFile(t, path+".1"))
		assert.Equal(t, "abcde\n", readFile(t, path))
	})
}

func TestFullDisk(t *testing.T) {
	const full = "/dev/full"
	_, err := os.Stat(full)
	require.NoError(t, err, "Linux's %s fails every write with ENOSPC", full)
	l, err := Open(full, Options{})
	require.NoError(t, err)
	f, err := l.Follow(10)
	require.NoError(t, err)

	for _, chunk := range []string{"a\nb", "\n"} {
		n, err := l.Write([]byte(chunk))
		require.ErrorIs(t, err, syscall.ENOSPC)
		assert.Equal(t, len(chunk), n, "p is consumed whole")
	}
	assert.Equal(t, []string{"a", "b"}, l.Tail())
	assert.Equal(t, "a", <-f.Lines())
	assert.Equal(t, "b", <-f.Lines())

	lines, err := l.Last(10)
	require.NoError(t, err)
	assert.Empty(t, lines, "a device is not read back")
	require.NoError(t, l.Close())
	_, open := <-f.Lines()
	assert.False(t, open)
}

func TestConcurrentWrite(t *testing.T) {
	const writers, each = 8, 500
	l, _ := openLog(t, Options{MaxSize: 4096, Keep: 100, TailLines: 5})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				_, err := fmt.Fprintf(l, "w%d %04d\n", w, i)
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	assert.Len(t, l.Tail(), 5)

	lines, err := l.Last(writers*each + 10)
	require.NoError(t, err)
	require.Len(t, lines, writers*each, "no line lost or duplicated across rotations")
	next := make([]int, writers)
	for _, line := range lines {
		var w, i int
		_, err := fmt.Sscanf(line, "w%d %04d", &w, &i)
		require.NoError(t, err, "line %q interleaved with another write", line)
		require.Equal(t, next[w], i, "writer %d out of order", w)
		next[w]++
	}
}
