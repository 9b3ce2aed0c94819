package output

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// follow follows l, and returns the backlog of n lines written out.
func follow(t *testing.T, l *Log, n int) ([]string, *Follower) {
	t.Helper()
	backlog, f, err := l.Follow(n)
	require.NoError(t, err)
	t.Cleanup(f.Close)
	defer backlog.Close()
	lines, err := backlog.Lines()
	require.NoError(t, err)
	return lines, f
}

// drain reads f until its channel closes.
func drain(f *Follower) []string {
	var lines []string
	for line := range f.Lines() {
		lines = append(lines, line)
	}
	return lines
}

// queued returns what f holds now, without waiting.
func queued(f *Follower) []string {
	var lines []string
	for {
		select {
		case line, ok := <-f.Lines():
			if !ok {
				return lines
			}
			lines = append(lines, line)
		default:
			return lines
		}
	}
}

func TestFollow(t *testing.T) {
	t.Run("backlog then live", func(t *testing.T) {
		l, _ := openLog(t, Options{MaxSize: 20})
		for i := range 10 {
			write(t, l, fmt.Sprintf("l%02d\n", i))
		}
		backlog, f := follow(t, l, 7) // reads back into path.1
		assert.Equal(t, numbered(3, 10), backlog)
		assert.Empty(t, queued(f))
		write(t, l, "l10\n", "l1")
		assert.Equal(t, []string{"l10"}, queued(f))
		write(t, l, "1\n")
		assert.Equal(t, []string{"l11"}, queued(f))
	})
	t.Run("unfinished line arrives once, whole", func(t *testing.T) {
		l, _ := openLog(t, Options{})
		write(t, l, "a\nha")
		backlog, f := follow(t, l, 5)
		assert.Equal(t, []string{"a"}, backlog)
		write(t, l, "lf\n")
		assert.Equal(t, []string{"half"}, queued(f))
	})
	t.Run("Close ends followers after the unfinished line", func(t *testing.T) {
		l, _ := openLog(t, Options{})
		_, f := follow(t, l, 0)
		_, g := follow(t, l, 0)
		write(t, l, "a\nb")
		require.NoError(t, l.Close())
		assert.Equal(t, []string{"a", "b"}, drain(f))
		assert.Equal(t, []string{"a", "b"}, drain(g))
		f.Close() // after the Log closed: no-op

		backlog, h := follow(t, l, 1)
		assert.Equal(t, []string{"b"}, backlog, "a closed Log gives the backlog")
		assert.Empty(t, drain(h))
	})
	t.Run("Follower.Close", func(t *testing.T) {
		l, _ := openLog(t, Options{})
		_, f := follow(t, l, 0)
		write(t, l, "a\n")
		f.Close()
		f.Close()
		write(t, l, "b\n")
		assert.Equal(t, []string{"a"}, drain(f))
	})
}

func TestFollowSlowReader(t *testing.T) {
	const lines = 100_000
	l, _ := openLog(t, Options{MaxSize: 1 << 20})
	_, f := follow(t, l, 0) // never read while writing
	_, g := follow(t, l, 0)
	start := time.Now()
	for i := range lines {
		_, err := fmt.Fprintf(l, "line %d\n", i)
		require.NoError(t, err)
	}
	assert.Less(t, time.Since(start), 20*time.Second, "Write waited for a follower")

	got := queued(f)
	require.Len(t, got, followBuffer)
	assert.Equal(t, "line 0", got[0])
	assert.Equal(t, fmt.Sprintf("line %d", followBuffer-1), got[followBuffer-1])
	write(t, l, "after\n")
	notice := fmt.Sprintf("[graft: %d lines dropped]", lines-followBuffer)
	assert.Equal(t, []string{notice, "after"}, queued(f), "the notice comes before the next line")

	require.NoError(t, l.Close())
	got = drain(g)
	require.Len(t, got, followBuffer+1)
	assert.Equal(t, fmt.Sprintf("[graft: %d lines dropped]", lines-followBuffer+1), got[followBuffer],
		"Close delivers the notice even to a full buffer")
}

// TestFollowConcurrent checks that followers started while several
// goroutines write see the lines of the file, in its order, with no gap and
// no duplicate. Few enough lines are written that no follower drops any.
func TestFollowConcurrent(t *testing.T) {
	const writers, each = 4, 250
	l, _ := openLog(t, Options{MaxSize: 2048, Keep: 100})

	// Writers write half their lines, wait until every follower has
	// started, and write the rest: each follower starts among writes, and
	// sees some.
	started := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if i == each/2 {
					<-started
				}
				// Lines written in two pieces test the unfinished line too.
				_, err := fmt.Fprintf(l, "w%d ", w)
				assert.NoError(t, err)
				_, err = fmt.Fprintf(l, "%04d\n", i)
				assert.NoError(t, err)
			}
		})
	}
	var (
		followers []*Follower
		backlogs  [][]string
	)
	for _, n := range []int{5, writers * each, 0, 1} {
		time.Sleep(time.Millisecond)
		backlog, f := follow(t, l, n)
		followers = append(followers, f)
		backlogs = append(backlogs, backlog)
	}
	close(started)
	wg.Wait()
	require.NoError(t, l.Close())

	all := last(t, l, 100*writers*each)
	for i, f := range followers {
		got := append(backlogs[i], drain(f)...)
		require.NotEmpty(t, got)
		assert.Equal(t, all[len(all)-len(got):], got, "follower %d: not a suffix of the file", i)
		assert.NotContains(t, got[0], "dropped")
	}
}
