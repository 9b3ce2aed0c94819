//go:build unix

package fence

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	l, err := Open(path)
	require.NoError(t, err)

	_, err = Open(path)
	require.ErrorIs(t, err, ErrInUse)
	assert.ErrorContains(t, err, path+".lock")

	require.NoError(t, l.Close())
	l = open(t, path)
	require.NoError(t, l.Admit("k", 1))
}
