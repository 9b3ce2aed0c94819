//go:build linux

package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/fsfault"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/plan"
)

// unsafePath asserts that err is a *safefs.UnsafeError about path, whose
// message says problem and whose hint says fix.
func unsafePath(t *testing.T, err error, path, problem, fix string) {
	t.Helper()
	var u *safefs.UnsafeError
	require.True(t, errors.As(err, &u), "want an *safefs.UnsafeError, got %v", err)
	assert.Equal(t, path, u.Path)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), problem)
	assert.Contains(t, u.Hint(), fix)
}

// victim is a file of root's (the test's user) that the attacks aim at;
// check asserts it is as it was.
func victim(t *testing.T) (path string, check func()) {
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

// TestHostileStateDir: a state dir another user made, with links to a
// file of root's where the host's files go, is refused before anything
// is written: the error names the dir and the fix. So is a state dir of
// root's that others may write, and one whose subdirectory is a link or
// another user's.
func TestHostileStateDir(t *testing.T) {
	base, asNobody := fsfault.Hostile(t)
	target, check := victim(t)
	asNobody(`mkdir -m 0755 state && cd state && mkdir logs instances &&
		for f in host.lock applied.json host.log host-id logs/api.log; do ln -s ` + target + ` $f; done`)
	state := filepath.Join(base, "state")
	_, err := Open(state, Options{Logger: quiet})
	unsafePath(t, err, state, "is owned by nobody (uid 65534), not by root (uid 0)", "chown -R root "+state)
	err = StartBackground(os.Args[0], state, time.Second)
	unsafePath(t, err, state, "is owned by nobody", "chown -R root "+state)
	check()

	mine := filepath.Join(base, "mine")
	require.NoError(t, os.Mkdir(mine, 0o700))
	require.NoError(t, os.Chmod(mine, 0o777))
	_, err = Open(mine, Options{Logger: quiet})
	unsafePath(t, err, mine, "may be written by its group and others", "chmod go-w "+mine)

	require.NoError(t, os.Chmod(mine, 0o750))
	asNobody("mkdir -m 0755 elsewhere")
	require.NoError(t, os.Symlink(filepath.Join(base, "elsewhere"), filepath.Join(mine, "logs")))
	_, err = Open(mine, Options{Logger: quiet})
	logs := filepath.Join(mine, "logs")
	unsafePath(t, err, logs, "is a symbolic link, where graft keeps a directory", "rm "+logs)

	require.NoError(t, os.Remove(logs))
	require.NoError(t, os.Mkdir(filepath.Join(mine, "runner"), 0o700))
	require.NoError(t, os.Chown(filepath.Join(mine, "runner"), 65534, 65534))
	_, err = Open(mine, Options{Logger: quiet})
	runner := filepath.Join(mine, "runner")
	unsafePath(t, err, runner, "is owned by nobody", "chown -R root "+runner)
}

// TestLinksInStateDir: in a state dir of the host's own, a link where one
// of its files goes is refused, not followed: the file it points at is
// never written. (Such links are left when a hostile dir is chowned.)
func TestLinksInStateDir(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	target, check := victim(t)
	require.NoError(t, os.MkdirAll(filepath.Join(state, "logs"), 0o750))

	lock := filepath.Join(state, lockFile)
	require.NoError(t, os.Symlink(target, lock))
	_, err := Open(state, Options{Logger: quiet})
	unsafePath(t, err, lock, "is a symbolic link, not a regular file", "rm "+lock)
	require.NoError(t, os.Remove(lock))

	id := filepath.Join(state, hostIDFile)
	require.NoError(t, os.Symlink(target, id))
	_, err = Open(state, Options{Logger: quiet})
	unsafePath(t, err, id, "is a symbolic link, not a regular file", "rm "+id)
	require.NoError(t, os.Remove(id))

	// A link where applied.json goes is a kept spec that cannot be read;
	// the next apply replaces the link, not the file.
	appliedPath := filepath.Join(state, appliedFile)
	require.NoError(t, os.Symlink(target, appliedPath))
	api := filepath.Join(state, "logs", "api.log")
	require.NoError(t, os.Symlink(target, api))
	h := open(t, state)
	defer h.Shutdown(context.Background())
	err = h.Reapply(context.Background())
	var kept *KeptSpecError
	require.ErrorAs(t, err, &kept)
	unsafePath(t, err, appliedPath, "is a symbolic link", "rm "+appliedPath)

	_, err = h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, "name: shop\nplugins:\n  api: {command: [sleep, '60']}\n")}, nil)
	unsafePath(t, err, api, "is a symbolic link", "rm "+api)
	fi, err := os.Lstat(appliedPath)
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "applied.json is a file of its own now")
	check()
}

// TestNamesFromRequests: a plugin name that comes in a request never
// becomes a path: names no plugins file can hold are refused, by the
// host's methods and over its API, and a file they would have named,
// outside the logs dir, is neither created nor written.
func TestNamesFromRequests(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	h := open(t, state)
	defer h.Shutdown(context.Background())
	c := serve(t, h)
	outside := filepath.Join(dir, "outside.log") // logs/../../outside.log
	require.NoError(t, os.WriteFile(outside, []byte("no newline at the end"), 0o600))
	for _, name := range []string{"../../outside", "../logs/x", "..", "", "API", "a.log", "a\x00b", strings.Repeat("a", 64)} {
		for _, follow := range []bool{false, true} {
			_, err := h.Follow(name, 10, follow)
			var nf *NotFoundError
			require.ErrorAs(t, err, &nf, "%q", name)
			assert.Contains(t, err.Error(), "lower-case letters, digits")
		}
		_, err := h.Leader(context.Background(), name)
		var nf *NotFoundError
		require.ErrorAs(t, err, &nf, "%q", name)
		if name != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = c.Logs(ctx, name, 10, true, &strings.Builder{})
			cancel()
			require.Error(t, err, "%q", name)
			if name != ".." { // which never gets past the router
				assert.Contains(t, err.Error(), "no plugin is named")
			}
		}
	}
	b, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "no newline at the end", string(b))
	_, err = os.Stat(filepath.Join(dir, "x.log"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestLogThatIsNotAFile: a named pipe or a link named like a plugin's log
// is refused at once, over the API too: nothing waits on the pipe, and the
// link's target is not read or written.
func TestLogThatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	h := open(t, state)
	defer h.Shutdown(context.Background())
	c := serve(t, h)
	fifo := filepath.Join(state, "logs", "api.log")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	target, check := victim(t)
	link := filepath.Join(state, "logs", "web.log")
	require.NoError(t, os.Symlink(target, link))

	start := time.Now()
	for name, path := range map[string]string{"api": fifo, "web": link} {
		for _, follow := range []bool{false, true} {
			_, err := h.Follow(name, 10, follow)
			unsafePath(t, err, path, "not a regular file", "rm "+path)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			var out strings.Builder
			err = c.Logs(ctx, name, 10, follow, &out)
			cancel()
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
			assert.Empty(t, out.String())
		}
	}
	assert.Less(t, time.Since(start), 5*time.Second, "nothing waited on the pipe")
	check()

	// A plugin whose log is a pipe does not start, and says why.
	_, err := h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, "name: shop\nplugins:\n  api: {command: [sleep, '60']}\n")}, nil)
	unsafePath(t, err, fifo, "is a named pipe", "rm "+fifo)
}

// TestKeptSpecCorrupt: a last applied spec that cannot be read does not
// keep the host from starting; its error names the file and the fix;
// status answers; down works and removes it.
func TestKeptSpecCorrupt(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	require.NoError(t, os.MkdirAll(state, 0o750))
	path := filepath.Join(state, appliedFile)
	require.NoError(t, os.WriteFile(path, []byte(`{"source": {"yaml": "plugins: {`), 0o600))
	h := open(t, state)
	defer h.Shutdown(context.Background())
	c := serve(t, h)
	ctx := context.Background()

	err := h.Reapply(ctx)
	var kept *KeptSpecError
	require.ErrorAs(t, err, &kept)
	assert.Equal(t, path, kept.Path)
	assert.Contains(t, err.Error(), "the last applied spec, "+path+", cannot be read: unexpected end of JSON input")
	assert.Contains(t, err.Error(), "graft apply replaces it (or graft down removes it)")
	assert.Contains(t, kept.Hint(), "graft down")

	st, err := c.Status(ctx)
	require.NoError(t, err, "status answers")
	assert.Empty(t, st.Plugins)
	err = c.Restart(ctx, hostapi.ApplyRequest{Restart: []string{"api"}}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot be read")

	require.NoError(t, c.Down(ctx, hostapi.ApplyRequest{Holder: "down"}, nil))
	_, err = os.Stat(path)
	assert.ErrorIs(t, err, os.ErrNotExist, "down removed it")
}

// TestKeptSpecReplaced: an apply replaces a corrupt kept spec.
func TestKeptSpecReplaced(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	require.NoError(t, os.MkdirAll(state, 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(state, appliedFile), []byte("garbage"), 0o600))
	h := open(t, state)
	_, err := h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, twoSleeps)}, nil)
	require.NoError(t, err)
	require.NoError(t, h.Shutdown(context.Background()))

	h = open(t, state)
	require.NoError(t, h.Reapply(context.Background()))
	assert.Equal(t, map[string]plan.Status{"db": plan.Running, "api": plan.Running}, statuses(h))
	require.NoError(t, h.Shutdown(context.Background()))
}

// TestStartUpWritesNothing: a host started again on its state dir, and
// its reapply of the same spec, rewrite none of the files it already has.
func TestStartUpWritesNothing(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	h := open(t, state)
	_, err := h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, twoSleeps)}, nil)
	require.NoError(t, err)
	require.NoError(t, h.Shutdown(context.Background()))

	files := []string{appliedFile, hostIDFile, "logs/db.log", "logs/api.log"}
	before := map[string]os.FileInfo{}
	for _, f := range files {
		fi, err := os.Stat(filepath.Join(state, f))
		require.NoError(t, err, f)
		before[f] = fi
	}
	time.Sleep(20 * time.Millisecond) // past the file system's timestamp granularity
	h = open(t, state)
	require.NoError(t, h.Reapply(context.Background()))
	require.NoError(t, h.Shutdown(context.Background()))
	for _, f := range files {
		fi, err := os.Stat(filepath.Join(state, f))
		require.NoError(t, err)
		assert.True(t, os.SameFile(before[f], fi), "%s is the same file", f)
		assert.Equal(t, before[f].ModTime(), fi.ModTime(), "%s is not written again", f)
	}

	// A changed spec is written.
	h = open(t, state)
	defer h.Shutdown(context.Background())
	_, err = h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, "name: shop\nplugins:\n  db: {command: [sleep, '61']}\n")}, nil)
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(state, appliedFile))
	require.NoError(t, err)
	assert.False(t, os.SameFile(before[appliedFile], fi), "a new spec is a new file")
}

// TestLinkedStateDir: a state dir may be a link of the host's own user to
// a directory of its own.
func TestLinkedStateDir(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	require.NoError(t, os.Mkdir(real, 0o700))
	link := filepath.Join(dir, ".graft")
	require.NoError(t, os.Symlink(real, link))
	h := open(t, link)
	_, err := h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, twoSleeps)}, nil)
	require.NoError(t, err)
	require.NoError(t, h.Shutdown(context.Background()))
	assert.FileExists(t, filepath.Join(real, appliedFile))
	assert.FileExists(t, filepath.Join(real, "logs", "db.log"))
}
