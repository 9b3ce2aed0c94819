package fence

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/graftland/graft/internal/fsfault"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, path string) *Ledger {
	t.Helper()
	l, err := Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

func TestAdmit(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "ledger.json"))
	assert.Equal(t, int64(0), l.Highest("k"), "an unseen key")

	require.NoError(t, l.Admit("k", 3))
	require.NoError(t, l.Admit("k", 3), "equal generations are admitted")
	require.NoError(t, l.Admit("k", 5))
	require.NoError(t, l.Admit("other", 1), "keys are counted apart")

	err := l.Admit("k", 3)
	require.ErrorIs(t, err, ErrStale)
	var stale *StaleError
	require.ErrorAs(t, err, &stale)
	assert.Equal(t, StaleError{Key: "k", Generation: 3, Highest: 5}, *stale)
	assert.EqualError(t, err, `stale generation 3 for key "k": generation 5 was already seen`)

	assert.Equal(t, int64(5), l.Highest("k"))
	assert.Equal(t, int64(1), l.Highest("other"))

	err = l.Admit("k", -1)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrStale)

	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "a second Close does nothing")
	assert.ErrorIs(t, l.Admit("k", 9), ErrClosed)
}

func TestDurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	l, err := Open(path)
	require.NoError(t, err)
	require.NoError(t, l.Admit("a", 2))
	require.NoError(t, l.Admit("b", 7))
	require.NoError(t, l.Close())

	l = open(t, path)
	assert.Equal(t, int64(2), l.Highest("a"))
	assert.Equal(t, int64(7), l.Highest("b"))
	assert.ErrorIs(t, l.Admit("b", 6), ErrStale)
	require.NoError(t, l.Admit("b", 8))
}

// TestConcurrent admits generations in a random order from many
// goroutines: the ledger ends at the highest, in memory and on disk, and
// every rejection was of a generation below one admitted.
func TestConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	l, err := Open(path)
	require.NoError(t, err)

	const n = 200
	gens := rand.Perm(n)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		admitted []int64
		rejected []*StaleError
	)
	for _, g := range gens {
		wg.Go(func() {
			err := l.Admit("k", int64(g))
			mu.Lock()
			defer mu.Unlock()
			var stale *StaleError
			switch {
			case err == nil:
				admitted = append(admitted, int64(g))
			case errors.As(err, &stale):
				rejected = append(rejected, stale)
			default:
				t.Errorf("admit %d: %v", g, err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(n-1), l.Highest("k"))
	assert.Len(t, rejected, n-len(admitted))
	assert.Contains(t, admitted, int64(n-1))
	for _, s := range rejected {
		assert.Less(t, s.Generation, s.Highest)
		assert.Contains(t, admitted, s.Highest, "a rejection names an admitted generation")
	}
	require.NoError(t, l.Close())

	l = open(t, path)
	assert.Equal(t, int64(n-1), l.Highest("k"))
}

// TestFailedWrite: when the file cannot be written, Admit fails and the
// ledger does not advance.
func TestFailedWrite(t *testing.T) {
	t.Run("read-only directory", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "ledger.json")
		l := open(t, path)
		require.NoError(t, l.Admit("k", 1))

		restore := fsfault.ReadOnly(t, dir)
		err := l.Admit("k", 5)
		require.Error(t, err)
		assert.NotErrorIs(t, err, ErrStale)
		assert.Equal(t, int64(1), l.Highest("k"))

		restore()
		require.NoError(t, l.Admit("k", 3), "5 was not admitted")
	})

	t.Run("directory removed", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		require.NoError(t, os.Mkdir(dir, 0o700))
		path := filepath.Join(dir, "ledger.json")
		l := open(t, path)
		require.NoError(t, l.Admit("k", 1))

		require.NoError(t, os.RemoveAll(dir))
		err := l.Admit("k", 5)
		require.Error(t, err)
		assert.NotErrorIs(t, err, ErrStale)
		assert.ErrorContains(t, err, path)
		assert.Equal(t, int64(1), l.Highest("k"))

		// The directory is replaced by a file: still no write.
		require.NoError(t, os.WriteFile(dir, []byte("x"), 0o600))
		require.Error(t, l.Admit("k", 5))
		assert.Equal(t, int64(1), l.Highest("k"))

		require.NoError(t, os.Remove(dir))
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, l.Admit("k", 3), "5 was not admitted")
		assert.Equal(t, int64(3), l.Highest("k"))
	})
}

func TestCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"highest": {"k": 3`), 0o600))
	_, err := Open(path)
	require.Error(t, err)
	assert.ErrorContains(t, err, "read ledger "+path+": ")

	// The failed Open released its lock.
	require.NoError(t, os.WriteFile(path, []byte(`{"highest": {"k": 3}}`), 0o600))
	l := open(t, path)
	assert.Equal(t, int64(3), l.Highest("k"))
}
