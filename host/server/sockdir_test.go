//go:build linux

package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/host"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/plan"
)

// deepStateDir is a state dir in a new temporary directory whose
// sockets' paths are too long for a unix socket address.
func deepStateDir(t *testing.T) string {
	return filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60), ".graft")
}

// onRunner is a plugin on the runner embedded in the host, which listens
// on a socket of its own.
const onRunner = "name: shop\nplugins:\n  api: {run: runner, command: [sleep, '60']}\n"

// syncBuffer is a log's output, read while the host writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runDeep runs a host of a deep state dir, with a plugin on its embedded
// runner, and checks what must hold wherever its sockets go: the host's
// socket and the runner's are outside the state dir, each short enough,
// in a directory of this user's alone (mode 0700, not a link) that is
// not the squatted one; the state dir's socket link names the host's; a
// client made before the host listened reaches it. Once the host has
// ended, both sockets and the link are gone, and a client finds no
// host. It returns the directories the two sockets were in, and the
// host's log.
func runDeep(t *testing.T, squatted string) (dirs []string, log string) {
	t.Helper()
	deep := deepStateDir(t)
	out := &syncBuffer{}
	h, err := host.Open(deep, host.Options{Logger: slog.New(slog.NewTextHandler(out, nil)), Timing: timing})
	require.NoError(t, err)
	early, err := hostapi.NewClient(deep)
	require.NoError(t, err, "a client made before its host listens")
	_, err = early.Status(context.Background())
	require.ErrorIs(t, err, hostapi.ErrNoHost)

	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	ready := make(chan struct{})
	go func() { served <- Serve(ctx, h, Options{}, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-served:
		cancel()
		h.Shutdown(context.Background())
		t.Fatalf("the host did not listen: %v", err)
	}
	require.NoError(t, early.Apply(context.Background(), hostapi.ApplyRequest{Source: wire(filepath.Dir(deep), onRunner)}, nil))
	st, err := early.Status(context.Background())
	require.NoError(t, err, "the early client reaches the host")
	assert.Equal(t, os.Getpid(), st.Host.PID)
	assert.Equal(t, map[string]plan.Status{"api": plan.Running}, statuses(st))

	link, err := os.ReadFile(filepath.Join(deep, hostapi.SocketLink))
	require.NoError(t, err)
	sock := strings.TrimSpace(string(link))
	runnerSock := otherSocket(t, sock)
	initLink, err := os.ReadFile(filepath.Join(deep, statedir.InitSocketLink))
	require.NoError(t, err, "the init of the host's namespace has its attach socket elsewhere too")
	initSock := strings.TrimSpace(string(initLink))
	for _, p := range []string{sock, runnerSock, initSock} {
		assert.LessOrEqual(t, len(p), 103, "sun_path holds 108 bytes on Linux, 104 on the BSDs")
		assert.False(t, strings.HasPrefix(p, deep), p)
		dir := filepath.Dir(p)
		assert.NotEqual(t, squatted, dir, "not in the squatted directory")
		fi, err := os.Lstat(dir)
		require.NoError(t, err)
		assert.True(t, fi.IsDir(), "%s: a directory, not a link", dir)
		assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), dir)
		dirs = append(dirs, dir)
	}

	early.Close()
	cancel()
	require.NoError(t, <-served)
	require.NoError(t, h.Shutdown(context.Background()))
	for _, p := range []string{sock, runnerSock, filepath.Join(deep, hostapi.SocketLink), initSock, filepath.Join(deep, statedir.InitSocketLink)} {
		_, err = os.Lstat(p)
		assert.True(t, errors.Is(err, os.ErrNotExist), "%s is removed", p)
	}
	c, err := hostapi.NewClient(deep)
	require.NoError(t, err)
	_, err = c.Status(context.Background())
	assert.ErrorIs(t, err, hostapi.ErrNoHost)
	return dirs, out.String()
}

// otherSocket is the path of the one unix socket other than sock (and the
// attach socket of the host's init, recorded in the state dir) that
// listens under $TMPDIR or $XDG_RUNTIME_DIR, read from /proc/net/unix:
// the embedded runner's socket is recorded nowhere but in the host's
// memory.
func otherSocket(t *testing.T, sock string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/net/unix")
	require.NoError(t, err)
	var found []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 8 || f[7] == sock || strings.HasSuffix(f[7], statedir.InitSocket) {
			continue
		}
		for _, base := range []string{os.TempDir(), os.Getenv("XDG_RUNTIME_DIR")} {
			if base != "" && strings.HasPrefix(f[7], base+"/") && !slices.Contains(found, f[7]) { // once per connection too
				found = append(found, f[7])
			}
		}
	}
	require.Len(t, found, 1, "one socket but the host's: the embedded runner's")
	return found[0]
}

// TestLongStateDir: without XDG_RUNTIME_DIR, the sockets of a state dir
// too deep for a unix socket (the host's, its embedded runner's) are
// each in a directory made for it in the temporary directory, whose name
// no one could guess (graft-<uid>-<random>), and which is gone once the
// host ended.
func TestLongStateDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", tmp)
	dirs, log := runDeep(t, "")
	for _, dir := range dirs {
		assert.Equal(t, tmp, filepath.Dir(dir))
		assert.True(t, strings.HasPrefix(filepath.Base(dir), "graft-"+strconv.Itoa(os.Getuid())+"-"), dir)
	}
	assert.NotEqual(t, dirs[0], dirs[1], "one directory per socket")
	assertEmpty(t, tmp)
	assert.NotContains(t, log, "level=WARN")
}

// TestSquattedSocketDir: graft-<uid> in the temporary directory, the
// socket directory graft once used for state dirs too deep for a socket,
// made first by someone else, does not keep a host of such a dir from
// listening, nor draws its sockets in. The test cannot be another user
// unless it is root, so the squatter's directory is made as another
// user's would look to graft: a symbolic link (to a directory of theirs
// it would be), a directory open to others, a file. (TestSocketDirOfAnotherUser,
// as root, has nobody own it.)
func TestSquattedSocketDir(t *testing.T) {
	for _, squat := range []struct {
		name string
		make func(path string) error
	}{
		{"symlink", func(p string) error {
			theirs := filepath.Join(filepath.Dir(p), "theirs")
			if err := os.Mkdir(theirs, 0o777); err != nil {
				return err
			}
			return os.Symlink(theirs, p)
		}},
		{"open", func(p string) error {
			if err := os.Mkdir(p, 0o700); err != nil {
				return err
			}
			return os.Chmod(p, 0o777)
		}},
		{"file", func(p string) error { return os.WriteFile(p, nil, 0o644) }},
	} {
		t.Run(squat.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("XDG_RUNTIME_DIR", "")
			t.Setenv("TMPDIR", tmp)
			squatted := filepath.Join(tmp, "graft-"+strconv.Itoa(os.Getuid()))
			require.NoError(t, squat.make(squatted))
			before := entries(t, tmp)

			runDeep(t, squatted)
			assert.Equal(t, before, entries(t, tmp), "the temporary directory is as it was")
			if fi, err := os.Stat(squatted); err == nil && fi.IsDir() {
				assertEmpty(t, squatted)
			}
		})
	}
}

// TestSquattedRuntimeDir: XDG_RUNTIME_DIR/graft that will not do (a
// symbolic link; an XDG_RUNTIME_DIR that another user could write) is
// warned of, once, and the host listens in a directory made for it.
func TestSquattedRuntimeDir(t *testing.T) {
	tmp, rt := t.TempDir(), t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", rt)
	t.Setenv("TMPDIR", tmp)
	require.NoError(t, os.Mkdir(filepath.Join(rt, "theirs"), 0o700))
	require.NoError(t, os.Symlink(filepath.Join(rt, "theirs"), filepath.Join(rt, "graft")))

	dirs, log := runDeep(t, filepath.Join(rt, "graft"))
	for _, dir := range dirs {
		assert.Equal(t, tmp, filepath.Dir(dir))
	}
	assert.Equal(t, 1, strings.Count(log, "level=WARN"), log)
	assert.Contains(t, log, "the socket directory "+filepath.Join(rt, "graft")+" is not this user's alone: it is a symbolic link")
	assert.Contains(t, log, "fix=\"another user may have made it")
	assertEmpty(t, tmp)
	assertEmpty(t, filepath.Join(rt, "theirs"))
}

// TestRuntimeDir: with XDG_RUNTIME_DIR set, the sockets of a deep state
// dir are in $XDG_RUNTIME_DIR/graft, which stays, empty, once the host
// ended.
func TestRuntimeDir(t *testing.T) {
	tmp, rt := t.TempDir(), t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", rt)
	t.Setenv("TMPDIR", tmp)
	dirs, log := runDeep(t, "")
	assert.Equal(t, []string{filepath.Join(rt, "graft"), filepath.Join(rt, "graft"), filepath.Join(rt, "graft")}, dirs, "the host's, its runner's and its init's")
	assertEmpty(t, filepath.Join(rt, "graft"))
	assertEmpty(t, tmp)
	assert.NotContains(t, log, "level=WARN")
}

// entries names what is in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// assertEmpty checks that nothing is left in dir.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	assert.Empty(t, entries(t, dir), "nothing is left in %s", dir)
}

// TestStaleSocketDir: what a host that was killed left (its socket link,
// naming a dead socket in the directory made for it) is no host to a
// client, and does not keep the next host from listening: that one
// listens in a directory of its own and replaces the link.
func TestStaleSocketDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", tmp)
	deep := deepStateDir(t)
	require.NoError(t, os.MkdirAll(deep, 0o750))
	left := filepath.Join(tmp, "graft-"+strconv.Itoa(os.Getuid())+"-1")
	require.NoError(t, os.Mkdir(left, 0o700))
	dead, err := net.Listen("unix", filepath.Join(left, "host.sock"))
	require.NoError(t, err)
	dead.(*net.UnixListener).SetUnlinkOnClose(false)
	dead.Close()
	require.NoError(t, os.WriteFile(filepath.Join(deep, hostapi.SocketLink), []byte(filepath.Join(left, "host.sock")+"\n"), 0o600))
	c, err := hostapi.NewClient(deep)
	require.NoError(t, err)
	_, err = c.Status(context.Background())
	assert.ErrorIs(t, err, hostapi.ErrNoHost)

	h := open(t, deep)
	t.Cleanup(func() { h.Shutdown(context.Background()) }) // after serve's cleanup
	serve(t, h)
	st, err := c.Status(context.Background())
	require.NoError(t, err, "the same client finds the new host")
	assert.Equal(t, os.Getpid(), st.Host.PID)
	path, err := hostapi.SocketPath(deep)
	require.NoError(t, err)
	assert.NotEqual(t, left, filepath.Dir(path))
	c.Close()
}
