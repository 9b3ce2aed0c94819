//go:build unix

package privsock

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListenIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	before := syscall.Umask(0o022)
	defer syscall.Umask(before)

	ln, err := Listen(path)
	require.NoError(t, err)
	defer ln.Close()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	assert.Equal(t, 0o022, syscall.Umask(0o022), "the umask is put back")

	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	c.Close()

	_, err = Listen(path)
	assert.Error(t, err, "a path in use is refused")
}
