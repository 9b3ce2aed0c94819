package output

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func last(t *testing.T, l *Log, n int) []string {
	t.Helper()
	lines, err := l.Last(n)
	require.NoError(t, err)
	return lines
}

func numbered(from, to int) []string {
	var lines []string
	for i := from; i < to; i++ {
		lines = append(lines, fmt.Sprintf("l%02d", i))
	}
	return lines
}

func TestLast(t *testing.T) {
	t.Run("across rotated files", func(t *testing.T) {
		l, _ := openLog(t, Options{MaxSize: 20, Keep: 3})
		for i := range 30 {
			write(t, l, fmt.Sprintf("l%02d\n", i)) // 4 bytes: 5 lines a file
		}
		// 6 files were written; path.3 … path.1 and path keep the last 4.
		assert.Equal(t, numbered(27, 30), last(t, l, 3))
		assert.Equal(t, numbered(18, 30), last(t, l, 12))
		assert.Equal(t, numbered(10, 30), last(t, l, 100))
		assert.Empty(t, last(t, l, 0))
	})
	t.Run("line cut by a rotation is whole", func(t *testing.T) {
		l, path := openLog(t, Options{MaxSize: 10})
		write(t, l, "abcdef", "ghij\n")
		assert.Equal(t, "abcdef", readFile(t, path+".1"))
		assert.Equal(t, []string{"abcdefghij"}, last(t, l, 1))
	})
	t.Run("cut and unfinished lines as in Tail", func(t *testing.T) {
		l, _ := openLog(t, Options{TailLines: 50})
		long := strings.Repeat("x", 3*maxLine+3)
		for _, chunk := range []string{
			"", "\n", "\n", "a\nb", "c\n", strings.Repeat("e", maxLine) + "\n",
			long, "\n", long[:maxLine], "end\n", "unfinished",
		} {
			write(t, l, chunk)
			assert.Equal(t, l.Tail(), last(t, l, 50), "after %.20q", chunk)
		}
		assert.Equal(t, []string{long[3*maxLine:], long[:maxLine], "end", "unfinished"}, last(t, l, 4))
	})
	t.Run("empty", func(t *testing.T) {
		l, _ := openLog(t, Options{})
		assert.Empty(t, last(t, l, 5))
	})
	t.Run("earlier runs", func(t *testing.T) {
		l, path := openLog(t, Options{})
		write(t, l, "first run\n")
		require.NoError(t, l.Close())
		l, err := Open(path, Options{})
		require.NoError(t, err)
		defer l.Close()
		write(t, l, "second run\n")
		assert.Equal(t, []string{"first run", "second run"}, last(t, l, 5))
	})
}

func TestLastLinesSmallChunks(t *testing.T) {
	// Lines longer than the scan chunk make prevNewline read several chunks.
	long := strings.Repeat("z", 2*scanChunk+7)
	r := strings.NewReader("a\n" + long + "\nb")
	from, err := lastStart(r, r.Size(), 10)
	require.NoError(t, err)
	lines, err := (&Section{r: r, close: func() {}, from: from, to: r.Size()}).Lines()
	require.NoError(t, err)
	want := []string{"a"}
	for i := 0; i < len(long); i += maxLine {
		want = append(want, long[i:min(i+maxLine, len(long))])
	}
	assert.Equal(t, append(want, "b"), lines)
}

// reference is what the last n lines of content are: split at '\n' (a final
// one ends the last line), lines cut every maxLine bytes.
func reference(content string, n int) []string {
	if content == "" || n <= 0 {
		return nil
	}
	var all []string
	for _, line := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
		if line == "" {
			all = append(all, "")
		}
		for i := 0; i < len(line); i += maxLine {
			all = append(all, line[i:min(i+maxLine, len(line))])
		}
	}
	return all[max(0, len(all)-n):]
}

func TestLastRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var b strings.Builder
		for range rng.IntN(8) {
			switch rng.IntN(4) {
			case 0:
				b.WriteString("\n")
			case 1:
				b.WriteString(strings.Repeat("a", rng.IntN(3*maxLine)))
			default:
				b.WriteString(strings.Repeat("b", rng.IntN(10)) + "\n")
			}
		}
		content := b.String()
		r := strings.NewReader(content)
		n := rng.IntN(12)
		from, err := lastStart(r, r.Size(), n)
		require.NoError(t, err)
		got, err := (&Section{r: r, close: func() {}, from: from, to: r.Size()}).Lines()
		require.NoError(t, err)
		require.Equal(t, reference(content, n), got, "last %d of %q", n, content)
	}
}

// TestLastToBoundedMemory: writing out the last lines of large files takes
// a few blocks of memory, however many lines are asked for.
func TestLastToBoundedMemory(t *testing.T) {
	l, _ := openLog(t, Options{MaxSize: 2 << 20, Keep: 3})
	line := strings.Repeat("m", 99) + "\n"
	chunk := strings.Repeat(line, 1000)
	for range 80 { // 8 MiB: the 4 files are full
		write(t, l, chunk)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := l.LastTo(1 << 30)
	require.NoError(t, err)
	c := &counter{w: io.Discard}
	_, err = s.WriteTo(c)
	s.Close()
	require.NoError(t, err)
	runtime.ReadMemStats(&after)
	assert.Equal(t, int64(4*20*len(chunk)), c.n, "every line of the four files: 20 writes each")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "allocated while writing out 8 MiB")
}
