//go:build linux

package privsock

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/asnobody"
)

// TestDialOwnSocket: a socket of this user's is dialled, and talks.
func TestDialOwnSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := Listen(path)
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		io.Copy(c, c)
		c.Close()
	}()
	c, err := Dial(context.Background(), path)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("hello\n"))
	require.NoError(t, err)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "hello\n", line)

	_, err = Dial(context.Background(), filepath.Join(t.TempDir(), "none.sock"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestDialRefusesAnotherUser: a socket whose listener runs as another
// user (nobody, for real) is refused before a byte is sent, with an
// error naming the socket and the listener's uid; root is refused too.
func TestDialRefusesAnotherUser(t *testing.T) {
	uid := asnobody.Need(t)
	dir := asnobody.Dir(t)
	prog := asnobody.Program(t, dir, "privsock.test")
	path := filepath.Join(dir, "theirs.sock")
	cmd := asnobody.Command(prog, path)
	cmd.Env = append(os.Environ(), roleEnv+"=listen")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	lines := bufio.NewScanner(out)
	require.True(t, lines.Scan())
	require.Equal(t, "ready", lines.Text())

	_, err = Dial(context.Background(), path)
	var peer *PeerError
	require.ErrorAs(t, err, &peer)
	assert.Equal(t, path, peer.Socket)
	assert.Equal(t, uid, peer.UID)
	assert.Equal(t, 0, peer.Want)
	assert.Contains(t, err.Error(), path+": the process listening there runs as uid ")
	assert.Contains(t, peer.Hint(), "remove "+path)

	got := make(chan string, 1)
	go func() {
		if lines.Scan() {
			got <- lines.Text()
		}
		close(got)
	}()
	select {
	case line := <-got:
		assert.Equal(t, "got 0 bytes", line, "the other user's listener got nothing")
	case <-time.After(10 * time.Second):
		t.Fatal("the other user's listener never saw the connection end")
	}

	// The same socket, dialled without the check, does connect: the check
	// is what refused it.
	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	c.Close()
}
