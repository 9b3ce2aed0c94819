//go:build unix

package hostapi

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSocketLinkIsAPipe: a client does not wait on a named pipe where the
// host records its socket's path.
func TestSocketLinkIsAPipe(t *testing.T) {
	state := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(state, SocketLink), 0o600))
	done := make(chan error, 1)
	go func() {
		c, err := NewClient(state)
		if err == nil {
			_, err = c.Status(context.Background())
			c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, ErrNoHost)
	case <-time.After(5 * time.Second):
		t.Fatal("the client waits on the pipe")
	}
}

// TestSocketPathOfADeepDir: a state dir too deep for a unix socket has its
// host's socket in the user's own socket directory, named by a digest of
// the dir, the same for every client; a shallow one has it in the dir.
func TestSocketPathOfADeepDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", tmp)
	shallow, err := SocketPath(tmp)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(tmp, "host.sock"), shallow)

	deep := filepath.Join(tmp, strings.Repeat("d", 60), strings.Repeat("e", 60), ".graft")
	path, err := SocketPath(deep)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(path), maxSocketPath)
	assert.Equal(t, filepath.Join(tmp, "graft-"+strconv.Itoa(os.Getuid())), filepath.Dir(path))
	again, err := SocketPath(deep)
	require.NoError(t, err)
	assert.Equal(t, path, again, "every client finds it")
	runner, err := SocketIn(deep, "runner.sock")
	require.NoError(t, err)
	assert.NotEqual(t, path, runner, "another socket of the same dir has another path")
}
