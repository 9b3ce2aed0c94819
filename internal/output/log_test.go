package output

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
			require.LessOrEqual(t, l.lines.Unfinished(), maxLine)
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

func TestLastOf(t *testing.T) {
	l, path := openLog(t, Options{MaxSize: 20, Keep: 2})
	for i := range 12 {
		write(t, l, fmt.Sprintf("l%02d\n", i))
	}
	require.NoError(t, l.Close())
	s, err := LastOf(path, Options{Keep: 2}, 4)
	require.NoError(t, err)
	defer s.Close()
	var b strings.Builder
	n, err := s.WriteTo(&b)
	require.NoError(t, err)
	assert.Equal(t, "l08\nl09\nl10\nl11\n", b.String())
	assert.Equal(t, int64(b.Len()), n)

	_, err = LastOf(filepath.Join(t.TempDir(), "none.log"), Options{}, 4)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// fakeSpace makes every Log's file system look as free as the returned
// value says, of size total, and free space looked at every few
// milliseconds. A fake: a real disk cannot be filled on demand in this
// package's tests; host's fill a real tmpfs.
func fakeSpace(t *testing.T, total int64) *atomic.Int64 {
	var free atomic.Int64
	free.Store(total)
	old, every := statFS, checkEvery
	statFS = func(*os.File) (int64, int64, bool) { return free.Load(), total, true }
	checkEvery = 5 * time.Millisecond
	t.Cleanup(func() { statFS, checkEvery = old, every })
	return &free
}

// TestReserve: below its reserve a log stops writing its file, with one
// notice, while Tail and followers still get every line; with room again
// it says how much it left out and writes again.
func TestReserve(t *testing.T) {
	t.Run("by time", func(t *testing.T) {
		free := fakeSpace(t, 100<<20) // reserve: 1%, 1 MiB
		l, path := openLog(t, Options{})
		_, f := follow(t, l, 0)
		write(t, l, "before\npart")
		free.Store(512 << 10)
		time.Sleep(20 * time.Millisecond)
		write(t, l, "ial\n", "lost\n")
		time.Sleep(20 * time.Millisecond)
		write(t, l, "more\n") // 512 KiB is still less than twice the reserve
		notice := "[graft: less than 1 MiB free on this disk: output is not written to this file until there is room again]\n"
		assert.Equal(t, "before\npart\n"+notice, readFile(t, path), "one notice, on a line of its own")
		assert.Equal(t, []string{"before", "partial", "lost", "more"}, l.Tail())
		assert.Equal(t, []string{"before", "partial", "lost", "more"}, queued(f), "followers get every line")

		free.Store(3 << 20)
		time.Sleep(20 * time.Millisecond)
		write(t, l, "after\n")
		assert.Equal(t, "before\npart\n"+notice+
			"[graft: room again on this disk: 14 bytes of output were not written to this file]\nafter\n", readFile(t, path))
	})
	t.Run("by bytes", func(t *testing.T) {
		free := fakeSpace(t, 1<<20) // reserve: 1%, 10.2 KiB; looked at every 4 KiB
		checkEvery = time.Hour
		l, path := openLog(t, Options{})
		line := strings.Repeat("x", 99) + "\n"
		write(t, l, line) // the first write looks
		free.Store(5 << 10)
		for range 50 {
			write(t, l, line)
		}
		b := readFile(t, path)
		assert.Less(t, len(b), 4096+2*len(line)+200, "at most 4 KiB more before the next look")
		assert.Equal(t, 1, strings.Count(b, "[graft: less than 10.2 KiB free"))
	})
	t.Run("a reserve of its own", func(t *testing.T) {
		free := fakeSpace(t, 1<<40)
		l, path := openLog(t, Options{Reserve: 100 << 20})
		free.Store(50 << 20)
		write(t, l, "a\n")
		assert.Equal(t, "[graft: less than 100 MiB free on this disk: output is not written to this file until there is room again]\n", readFile(t, path))
	})
	t.Run("open writes nothing", func(t *testing.T) {
		fakeSpace(t, 100<<20)
		l, path := openLog(t, Options{})
		write(t, l, "killed mid-li")
		require.NoError(t, l.Close())
		l, err := Open(path, Options{})
		require.NoError(t, err)
		defer l.Close()
		assert.Equal(t, "killed mid-li", readFile(t, path))
	})
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

// TestOpened: Opened is given the file at Open and after each rotation.
func TestOpened(t *testing.T) {
	var names []string
	var sizes []int64
	l, path := openLog(t, Options{MaxSize: 10, Opened: func(f *os.File) {
		fi, err := f.Stat()
		require.NoError(t, err)
		names = append(names, f.Name())
		sizes = append(sizes, fi.Size())
	}})
	write(t, l, "12345\n", "67890\n")
	assert.Equal(t, []string{path, path}, names)
	assert.Equal(t, []int64{0, 0}, sizes, "a fresh file after the rotation")
}
