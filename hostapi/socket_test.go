//go:build unix

package hostapi

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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

// TestSocketPathOfADeepDir: a state dir's socket is host.sock in it; a
// state dir too deep for that has its host's socket where its host
// recorded it, and, with nothing recorded, no host: finding that makes
// nothing in the temporary directory (the socket directory is the
// host's to make).
func TestSocketPathOfADeepDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", tmp)
	shallow, err := SocketPath(tmp)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(tmp, "host.sock"), shallow)

	deep := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60), ".graft")
	require.NoError(t, os.MkdirAll(deep, 0o700))
	_, err = SocketPath(deep)
	assert.ErrorIs(t, err, ErrNoHost)
	c, err := NewClient(deep)
	require.NoError(t, err)
	_, err = c.Status(context.Background())
	assert.ErrorIs(t, err, ErrNoHost)
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing made")

	mine := filepath.Join(t.TempDir(), "mine")
	require.NoError(t, os.Mkdir(mine, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(deep, SocketLink), []byte(mine+"/host.sock\n"), 0o600))
	path, err := SocketPath(deep)
	require.NoError(t, err)
	assert.Equal(t, mine+"/host.sock", path)
}

// TestStaleLinkNotFollowed: a socket link that a host that died left,
// naming a directory since gone, or made again by someone else (open to
// others here: the test cannot be another user) with a socket listening
// in it, is no host: the client says so, and does not connect there.
func TestStaleLinkNotFollowed(t *testing.T) {
	deep := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60), ".graft")
	require.NoError(t, os.MkdirAll(deep, 0o700))
	theirs := filepath.Join(t.TempDir(), "graft-0-1234")
	for _, why := range []string{"gone", "open to others"} {
		if why != "gone" {
			require.NoError(t, os.Mkdir(theirs, 0o777))
			require.NoError(t, os.Chmod(theirs, 0o777))
		}
		sock := filepath.Join(theirs, "host.sock")
		require.NoError(t, os.WriteFile(filepath.Join(deep, SocketLink), []byte(sock+"\n"), 0o600))
		var accepted atomic.Int32
		if why != "gone" {
			ln, err := net.Listen("unix", sock)
			require.NoError(t, err)
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					accepted.Add(1)
					c.Close()
				}
			}()
		}
		c, err := NewClient(deep)
		require.NoError(t, err)
		_, err = c.Status(context.Background())
		assert.ErrorIs(t, err, ErrNoHost, why)
		c.Close()
		assert.Zero(t, accepted.Load(), "%s: no connection", why)
	}
}

// TestListenDeep: the sockets of a state dir too deep for them are each
// in a directory made for it, which Remove removes with the socket; one
// in the state dir replaces a socket a daemon that died left there.
func TestListenDeep(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", tmp)
	deep := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60), ".graft")
	host, err := Listen(deep, "host.sock")
	require.NoError(t, err)
	runner, err := Listen(deep, "runner.sock")
	require.NoError(t, err)
	for _, s := range []*Socket{host, runner} {
		assert.True(t, s.Elsewhere())
		assert.True(t, s.Fresh())
		assert.NoError(t, s.Unused())
		assert.LessOrEqual(t, len(s.Path), maxSocketPath)
		assert.Equal(t, tmp, filepath.Dir(filepath.Dir(s.Path)))
		c, err := net.Dial("unix", s.Path)
		require.NoError(t, err)
		c.Close()
	}
	assert.NotEqual(t, filepath.Dir(host.Path), filepath.Dir(runner.Path))
	for _, s := range []*Socket{host, runner} {
		s.Close()
		s.Remove()
	}
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, entries, "both directories are removed")

	state := t.TempDir()
	dead, err := net.Listen("unix", filepath.Join(state, "host.sock"))
	require.NoError(t, err)
	dead.(*net.UnixListener).SetUnlinkOnClose(false)
	dead.Close()
	s, err := Listen(state, "host.sock")
	require.NoError(t, err, "the dead one's socket is replaced")
	assert.False(t, s.Elsewhere())
	assert.Equal(t, filepath.Join(state, "host.sock"), s.Path)
	s.Close()
	s.Remove()
}
