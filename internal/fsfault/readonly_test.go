package fsfault

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	restore := ReadOnly(t, dir)
	_, err := os.CreateTemp(dir, "x")
	assert.Error(t, err, "no new entry while read-only")
	restore()
	f, err := os.CreateTemp(dir, "x")
	require.NoError(t, err, "writable again")
	f.Close()
	restore() // twice is once
}
