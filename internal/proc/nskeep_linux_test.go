package proc

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestKeeperPidHandedOutAgain: a pid handed out again while the keeper
// is yet to close the read end of the plugin that had it has the keeper
// close that one, and keep the new plugin's, which it gives back.
func TestKeeperPidHandedOutAgain(t *testing.T) {
	k, err := startKeeper() // unshare(CLONE_FILES) needs no privilege
	require.NoError(t, err)
	defer k.w.close() // its thread ends with it
	// pipe returns a read end, for the keeper, and the write end, closed
	// at the test's end.
	pipe := func() (int, *os.File) {
		var p [2]int
		require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
		w := os.NewFile(uintptr(p[1]), "w")
		t.Cleanup(func() { w.Close() })
		return p[0], w
	}
	fill := func(from int) { // hands the keeper what it has taken
		for len(k.pending) > 0 {
			r, _ := pipe()
			k.put(from, r)
			from++
		}
	}

	r1, w1 := pipe()
	k.put(5, r1)
	fill(100)
	k.drop(5) // waits for keepBatch drops
	r2, w2 := pipe()
	k.put(5, r2) // pid 5 again

	assert.Eventually(t, func() bool {
		_, err := w1.Write([]byte("x"))
		return err != nil
	}, 5*time.Second, 10*time.Millisecond, "the old plugin's read end, which the keeper held, is closed")

	var want unix.Stat_t
	require.NoError(t, unix.Fstat(int(w2.Fd()), &want))
	fill(200)
	gave := k.give(5)
	require.GreaterOrEqual(t, gave, 0, "the keeper gives the read end of pid 5 back")
	defer unix.Close(gave)
	var got unix.Stat_t
	require.NoError(t, unix.Fstat(gave, &got))
	assert.Equal(t, want.Ino, got.Ino, "what it gives is the new plugin's pipe")
	_, err = w2.Write([]byte("x"))
	assert.NoError(t, err, "the new plugin's pipe still has a reader")
}
