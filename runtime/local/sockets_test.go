//go:build linux

package local

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runtime"
)

// freeAddr is a loopback TCP address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func dials(network, addr string) bool {
	c, err := net.Dial(network, addr)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// TestHoldSockets: a plugin's sockets are bound once and kept by address
// (renamed, or listed again, they are the same socket); another address
// closes the old one; a socket that cannot be bound changes nothing; a
// unix socket gets its mode; Release closes them and removes the path.
func TestHoldSockets(t *testing.T) {
	dir := t.TempDir()
	var tab socketTable
	defer tab.closeAll()
	a, b := freeAddr(t), freeAddr(t)
	sock := filepath.Join(dir, "run", "admin.sock")
	first, err := tab.hold("api", []launch.Listen{{Name: "http", TCP: a}, {Name: "admin", Unix: sock, Mode: "0660"}})
	require.NoError(t, err)
	require.Len(t, first, 2)
	assert.True(t, dials("tcp", a))
	assert.True(t, dials("unix", sock))
	fi, err := os.Stat(sock)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o660), fi.Mode().Perm())
	var fl int
	fl, err = unix.FcntlInt(uintptr(proc.FD(first[0].f)), unix.F_GETFL, 0)
	require.NoError(t, err)
	assert.Zero(t, fl&unix.O_NONBLOCK, "handed over in blocking mode, as systemd's")

	again, err := tab.hold("api", []launch.Listen{{Name: "web", TCP: a}, {Name: "admin", Unix: sock, Mode: "0600"}})
	require.NoError(t, err)
	assert.Same(t, first[0], again[0], "the same socket, renamed")
	assert.Equal(t, "web", again[0].name)
	assert.Same(t, first[1], again[1])
	fi, err = os.Stat(sock)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "its new mode")

	// Another process listens at c: nothing changes.
	c := freeAddr(t)
	other, err := net.Listen("tcp", c)
	require.NoError(t, err)
	_, err = tab.hold("api", []launch.Listen{{Name: "web", TCP: b}, {Name: "extra", TCP: c}})
	require.ErrorIs(t, err, syscall.EADDRINUSE)
	assert.Contains(t, err.Error(), "listen[1] (extra): ")
	assert.True(t, dials("tcp", a), "the old socket is kept")
	assert.False(t, dials("tcp", b), "the new one bound on the way is closed again")
	other.Close()

	// Another address: the old socket closes.
	moved, err := tab.hold("api", []launch.Listen{{Name: "web", TCP: b}})
	require.NoError(t, err)
	assert.NotSame(t, first[0], moved[0])
	assert.True(t, dials("tcp", b))
	assert.False(t, dials("tcp", a))
	assert.False(t, dials("unix", sock))
	_, err = os.Stat(sock)
	assert.True(t, os.IsNotExist(err), "the unix socket's path is removed with it")

	tab.release("api")
	assert.False(t, dials("tcp", b))
	assert.Empty(t, tab.byKey)
}

// TestClaimSockets: the sockets a daemon's last program recorded for
// this one (the same process, after an exec) are taken back only where
// the descriptor is a listening socket at the recorded address, and only
// by the same pid; the record is read once.
func TestClaimSockets(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	f, err := ln.(*net.TCPListener).File()
	require.NoError(t, err)
	ln.Close()
	// A descriptor the last program left open, as an exec leaves it.
	fd, err := unix.Dup(proc.FD(f))
	require.NoError(t, err)
	f.Close()
	devnull, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer devnull.Close()
	rec := socketsRecord{PID: os.Getpid(), Sockets: []recordedSocket{
		{Key: "api", Name: "http", Address: "tcp:" + addr, FD: fd},
		{Key: "api", Name: "other", Address: "tcp:127.0.0.1:1", FD: proc.FD(devnull)}, // not a listening socket there
	}}
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	path := filepath.Join(dir, "sockets.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))

	l := &Local{opt: Options{Sockets: path}}
	err = l.claimSockets()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the sockets other handed over are not listening where recorded")
	_, err = os.Stat(path)
	assert.True(t, os.IsNotExist(err), "read once")
	require.Len(t, l.sockets.byKey["api"], 1)
	got := l.sockets.byKey["api"][0]
	// What is not a socket at its address is not taken over: no file of
	// the claim's, closed when collected, closes it under its owner.
	goruntime.GC()
	goruntime.GC()
	_, err = devnull.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF, "/dev/null is still open, as its owner's")
	assert.True(t, dials("tcp", addr), "the socket listens on")
	// The next start of the plugin takes it as it is: no second bind.
	ss, err := l.sockets.hold("api", []launch.Listen{{Name: "http", TCP: addr}})
	require.NoError(t, err)
	assert.Same(t, got, ss[0])
	l.ReleaseSockets(runtime.Request{Name: "api"})
	assert.False(t, dials("tcp", addr))

	// Another process's record: its descriptors are not this one's.
	rec.PID = 1
	b, _ = json.Marshal(rec)
	require.NoError(t, os.WriteFile(path, b, 0o600))
	l = &Local{opt: Options{Sockets: path}}
	require.NoError(t, l.claimSockets())
	assert.Empty(t, l.sockets.byKey)
}

// TestSameAddress: a socket asked for on any address is bound on the
// unspecified one.
func TestSameAddress(t *testing.T) {
	assert.True(t, sameAddress("tcp:127.0.0.1:80", "tcp:127.0.0.1:80"))
	assert.True(t, sameAddress("tcp:[::]:8080", "tcp::8080"))
	assert.True(t, sameAddress("tcp:0.0.0.0:8080", "tcp::8080"))
	assert.False(t, sameAddress("tcp:127.0.0.1:8080", "tcp::8080"))
	assert.False(t, sameAddress("tcp:127.0.0.1:81", "tcp:127.0.0.1:80"))
	assert.True(t, sameAddress("unix:/run/a.sock", "unix:/run/a.sock"))
	assert.False(t, sameAddress("unix:/run/a.sock", "unix:/run/b.sock"))
}
