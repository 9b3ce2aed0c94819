package output

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sent is Lines with what they hand to Line.
type sent struct {
	*Lines
	got []string // guarded by Lines' lock, which Line is called with
}

func newSent(opt LineOptions) *sent {
	s := &sent{}
	opt.Line = func(line string) { s.got = append(s.got, line) }
	s.Lines = NewLines(opt)
	return s
}

func (s *sent) write(t *testing.T, chunks ...string) {
	t.Helper()
	for _, c := range chunks {
		n, err := s.Write([]byte(c))
		require.NoError(t, err)
		require.Equal(t, len(c), n)
	}
}

// take returns what Line got since the last take.
func (s *sent) take() []string {
	got := s.got
	s.got = nil
	return got
}

func TestLinesSplit(t *testing.T) {
	s := newSent(LineOptions{Keep: 10})
	assert.Nil(t, s.Tail(), "nothing written")
	s.write(t, "", "")
	assert.Nil(t, s.Tail(), "empty writes")
	assert.Empty(t, s.take())

	s.write(t, "no newline")
	assert.Equal(t, []string{"no newline"}, s.Tail(), "an unfinished line counts in Tail")
	assert.Empty(t, s.take(), "and is not sent")
	assert.Equal(t, len("no newline"), s.Unfinished())

	s.write(t, " yet\n\nb\nc", "", "d\n")
	assert.Equal(t, []string{"no newline yet", "", "b", "cd"}, s.take())
	assert.Equal(t, []string{"no newline yet", "", "b", "cd"}, s.Tail())
	assert.Zero(t, s.Unfinished())
}

func TestLinesKeep(t *testing.T) {
	writeNumbered := func(s *sent, from, to int) {
		for _, line := range numbered(from, to) {
			s.write(t, line+"\n")
		}
	}
	t.Run("exactly Keep", func(t *testing.T) {
		s := newSent(LineOptions{Keep: 3})
		writeNumbered(s, 0, 3)
		assert.Equal(t, []string{"l00", "l01", "l02"}, s.Tail())
	})
	t.Run("Keep+1", func(t *testing.T) {
		s := newSent(LineOptions{Keep: 3})
		writeNumbered(s, 0, 4)
		assert.Equal(t, []string{"l01", "l02", "l03"}, s.Tail())
		assert.Len(t, s.take(), 4, "every line is sent")
	})
	t.Run("Keep-1 and an unfinished line", func(t *testing.T) {
		s := newSent(LineOptions{Keep: 3})
		writeNumbered(s, 0, 2)
		s.write(t, "part")
		assert.Equal(t, []string{"l00", "l01", "part"}, s.Tail())
	})
	t.Run("Keep and an unfinished line", func(t *testing.T) {
		s := newSent(LineOptions{Keep: 3})
		writeNumbered(s, 0, 3)
		s.write(t, "part")
		assert.Equal(t, []string{"l01", "l02", "part"}, s.Tail())
	})
	t.Run("many times Keep", func(t *testing.T) {
		s := newSent(LineOptions{Keep: 3})
		writeNumbered(s, 0, 100)
		assert.Equal(t, []string{"l97", "l98", "l99"}, s.Tail())
	})
	t.Run("default", func(t *testing.T) {
		s := newSent(LineOptions{})
		writeNumbered(s, 0, 30)
		assert.Equal(t, numbered(10, 30), s.Tail())
	})
}

// TestLinesMax: a line longer than Max is cut into lines of Max bytes,
// counted from its start, however it is written.
func TestLinesMax(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   []string // sent
		tail   []string
	}{
		{"exactly Max", []string{"abcd\n"}, []string{"abcd"}, []string{"abcd"}},
		{"exactly Max, newline later", []string{"abcd", "\n"}, []string{"abcd"}, []string{"abcd"}},
		{"Max+1", []string{"abcde\n"}, []string{"abcd", "e"}, []string{"abcd", "e"}},
		{"twice Max", []string{"abcdefgh\n"}, []string{"abcd", "efgh"}, []string{"abcd", "efgh"}},
		{"byte by byte", strings.Split("abcdefghi\n", ""), []string{"abcd", "efgh", "i"}, []string{"abcd", "efgh", "i"}},
		{"across writes", []string{"ab", "cdefg", "h", "ij\nk"}, []string{"abcd", "efgh", "ij"}, []string{"abcd", "efgh", "ij", "k"}},
		{"unfinished at Max waits", []string{"abcd"}, nil, []string{"abcd"}},
		{"unfinished over Max", []string{"abcdefghij"}, []string{"abcd", "efgh"}, []string{"abcd", "efgh", "ij"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSent(LineOptions{Keep: 10, Max: 4})
			s.write(t, tc.chunks...)
			assert.Equal(t, tc.want, s.take())
			assert.Equal(t, tc.tail, s.Tail())
			assert.LessOrEqual(t, s.Unfinished(), 4)
		})
	}
}

// TestLinesEndFull: with EndFull, an unfinished line of Max bytes when a
// Write returns is sent then; within a Write, lines are cut as without.
func TestLinesEndFull(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"exactly Max", []string{"abcd\n"}, []string{"abcd"}},
		{"unfinished at Max", []string{"abcd"}, []string{"abcd"}},
		{"exactly Max, newline later", []string{"abcd", "\n"}, []string{"abcd", ""}},
		{"unfinished over Max", []string{"abcdefghij"}, []string{"abcd", "efgh"}},
		{"unfinished at twice Max", []string{"abcdefgh"}, []string{"abcd", "efgh"}},
		{"across writes", []string{"ab", "cd", "ef\n"}, []string{"abcd", "ef"}},
		{"Max+1", []string{"abcde\n"}, []string{"abcd", "e"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSent(LineOptions{Keep: 10, Max: 4, EndFull: true})
			s.write(t, tc.chunks...)
			assert.Equal(t, tc.want, s.take())
			assert.Less(t, s.Unfinished(), 4)
		})
	}
}

func TestLinesEnd(t *testing.T) {
	s := newSent(LineOptions{Keep: 10})
	s.End()
	assert.Empty(t, s.take(), "nothing unfinished: nothing sent")
	s.write(t, "a\nb")
	s.End()
	s.End()
	assert.Equal(t, []string{"a", "b"}, s.take())
	assert.Equal(t, []string{"a", "b"}, s.Tail())
	s.write(t, "c\n")
	assert.Equal(t, []string{"c"}, s.take(), "the next line starts afresh")
}

// TestLinesConcurrent: lines of concurrent writers are sent whole, each
// writer's in its order, and in the order Tail keeps them.
func TestLinesConcurrent(t *testing.T) {
	const writers, each = 8, 500
	s := newSent(LineOptions{Keep: 5})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				_, err := fmt.Fprintf(s, "w%d %04d\n", w, i)
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	got := s.take()
	require.Len(t, got, writers*each)
	assert.Equal(t, got[len(got)-5:], s.Tail())
	next := make([]int, writers)
	for _, line := range got {
		var w, i int
		_, err := fmt.Sscanf(line, "w%d %04d", &w, &i)
		require.NoError(t, err, "line %q", line)
		require.Equal(t, next[w], i, "writer %d out of order", w)
		next[w]++
	}
}
