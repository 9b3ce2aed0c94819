// Package testsupport is what the tests of several of graft's packages
// share: files for attacks to aim at, the test binary run again in a
// role, free loopback addresses, certificates, waits for processes to be
// gone, the PID namespaces a test needs, plugins files. Only tests link
// it. It imports runtime/runtimetest and what that imports, whose own
// tests therefore cannot use it.
package testsupport

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/safefs"
)

// UnsafePath asserts that err is a *safefs.UnsafeError about path, whose
// message says problem and whose hint says fix.
func UnsafePath(t *testing.T, err error, path, problem, fix string) {
	t.Helper()
	var u *safefs.UnsafeError
	require.True(t, errors.As(err, &u), "want an *safefs.UnsafeError, got %v", err)
	assert.Equal(t, path, u.Path)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), problem)
	assert.Contains(t, u.Hint(), fix)
}

// Victim is a file of the test's user that attacks aim at (through links,
// say); check asserts it is as it was.
func Victim(t *testing.T) (path string, check func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(path, []byte("root's"), 0o644))
	return path, func() {
		t.Helper()
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "root's", string(b), "the file the links point at is untouched")
	}
}
