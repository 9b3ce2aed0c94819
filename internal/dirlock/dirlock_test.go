//go:build unix

package dirlock

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	f, err := Lock(path)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(os.Getpid())+"\n", string(b))

	// A second open file is refused, even in this process, and told who
	// holds it.
	_, err = Lock(path)
	var held *HeldError
	require.True(t, errors.As(err, &held), "%v", err)
	assert.Equal(t, os.Getpid(), held.PID)
	assert.Contains(t, err.Error(), "pid "+strconv.Itoa(os.Getpid())+" holds "+path)

	require.NoError(t, f.Close())
	f, err = Lock(path)
	require.NoError(t, err)
	f.Close()
}
