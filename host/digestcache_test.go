//go:build linux

package host

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/contentdigest"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/internal/testsupport"
)

func write(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}

func lookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	require.NoError(t, err)
	return p
}

// cacheFiles lists the files of the state dir's digests/.
func cacheFiles(t *testing.T, state string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(state, statedir.Digests))
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// tablesOf are the names in digests/ of the tables of paths.
func tablesOf(paths ...string) []string {
	var names []string
	for _, p := range paths {
		names = append(names, contentdigest.FileName(p))
	}
	sort.Strings(names)
	return names
}

// TestDigestCachePruned: the digest cache keeps the files the applied spec
// reads and no others: a plugin's files that leave the spec, a file's
// older versions and a plan's that was not applied go at the next
// successful apply, and graft down leaves nothing. Real files, a real
// host: before the cache was pruned, one entry per file version stayed
// for good.
func TestDigestCachePruned(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	for i := range 20 {
		write(t, filepath.Join(dir, "static", fmt.Sprintf("f%d.html", i)), "page")
	}
	write(t, filepath.Join(dir, "conf", "api.conf"), "port 1")
	write(t, filepath.Join(dir, "other.conf"), "x")
	sleep := lookPath(t, "sleep")
	both := fmt.Sprintf("name: shop\nplugins:\n  web: {command: [%s, '60'], files: [static]}\n  api: {command: [%s, '60'], files: [conf/api.conf]}\n", sleep, sleep)
	webOnly := fmt.Sprintf("name: shop\nplugins:\n  web: {command: [%s, '60'], files: [static]}\n", sleep)
	planned := fmt.Sprintf("name: shop\nplugins:\n  web: {command: [%s, '60'], files: [static, other.conf]}\n", sleep)
	h := open(t, state)
	defer h.Shutdown(context.Background())
	ctx := context.Background()

	_, err := h.Apply(ctx, ApplyRequest{Source: testsupport.Source(dir, both)}, Report{})
	require.NoError(t, err)
	static, conf := filepath.Join(dir, "static"), filepath.Join(dir, "conf", "api.conf")
	assert.Equal(t, tablesOf(sleep, static, conf), cacheFiles(t, state), "one table per path the spec reads")

	// Files changed, a plan of another file not applied, then an apply
	// without api: what is left is web's, at the files' new versions.
	for i := range 20 {
		write(t, filepath.Join(dir, "static", fmt.Sprintf("f%d.html", i)), "page, new")
	}
	require.NoError(t, os.Remove(filepath.Join(dir, "static", "f0.html")))
	_, err = h.Plan(testsupport.Source(dir, planned))
	require.NoError(t, err)
	assert.Contains(t, cacheFiles(t, state), contentdigest.FileName(filepath.Join(dir, "other.conf")), "a plan caches what it read")
	_, err = h.Apply(ctx, ApplyRequest{Source: testsupport.Source(dir, webOnly)}, Report{})
	require.NoError(t, err)
	assert.Equal(t, tablesOf(sleep, static), cacheFiles(t, state), "api's file and the plan's are pruned")
	table, err := os.ReadFile(filepath.Join(state, statedir.Digests, contentdigest.FileName(static)))
	require.NoError(t, err)
	assert.Equal(t, 19+2, strings.Count(string(table), "\n"), "a line per file there now, no old version:\n%s", table)
	assert.NotContains(t, string(table), `"f0.html"`)
	assert.ElementsMatch(t, []string{filepath.Clean(sleep), static}, h.digests.Roots(), "memory is pruned too")

	require.NoError(t, h.Down(ctx, ApplyRequest{Holder: "test"}, Report{}))
	assert.Empty(t, cacheFiles(t, state), "graft down leaves nothing")
	assert.Empty(t, h.digests.Roots())
}

// TestDigestCacheNotPrunedUnderAPlan: a prune waits for a parse under
// way, which holds the cache, and gives up rather than take a table it may
// still need; the next prune does it.
func TestDigestCacheNotPrunedUnderAPlan(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	write(t, filepath.Join(dir, "a.conf"), "a")
	sleep := lookPath(t, "sleep")
	withA := fmt.Sprintf("name: shop\nplugins:\n  web: {command: [%s, '60'], files: [a.conf]}\n", sleep)
	bare := fmt.Sprintf("name: shop\nplugins:\n  web: {command: [%s, '60']}\n", sleep)
	h := open(t, state)
	defer h.Shutdown(context.Background())
	ctx := context.Background()
	_, err := h.Apply(ctx, ApplyRequest{Source: testsupport.Source(dir, withA)}, Report{})
	require.NoError(t, err)

	// Another process's plan (a graft plan of the CLI) holds the cache.
	other := contentdigest.New(filepath.Join(state, statedir.Digests))
	release := other.Hold()
	_, err = h.Apply(ctx, ApplyRequest{Source: testsupport.Source(dir, bare)}, Report{})
	release()
	require.NoError(t, err)
	assert.Equal(t, tablesOf(sleep, filepath.Join(dir, "a.conf")), cacheFiles(t, state), "held: not pruned")

	_, err = h.Apply(ctx, ApplyRequest{Source: testsupport.Source(dir, bare)}, Report{})
	require.NoError(t, err)
	assert.Equal(t, tablesOf(sleep), cacheFiles(t, state), "the next apply prunes")
}

// TestOnChangeNoneNotCached: a files: entry of onChange: none is no part of
// the plugin's state (docs/semantics.md, "Content"): a tree holding a
// named pipe and a file of mode 000 is applied without a read, has no
// table in the cache, and a change under it leaves the plugin unchanged in
// the plan.
func TestOnChangeNoneNotCached(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	data := filepath.Join(dir, "data")
	write(t, filepath.Join(data, "locked"), "secret")
	require.NoError(t, os.Chmod(filepath.Join(data, "locked"), 0))
	require.NoError(t, syscall.Mkfifo(filepath.Join(data, "pipe"), 0o600))
	sleep := lookPath(t, "sleep")
	yaml := fmt.Sprintf("name: shop\nplugins:\n  db: {command: [%s, '60'], files: [{path: data, onChange: none}]}\n", sleep)
	h := open(t, state)
	defer h.Shutdown(context.Background())
	_, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, yaml)}, Report{})
	require.NoError(t, err)
	assert.Equal(t, tablesOf(sleep), cacheFiles(t, state), "data is not digested")
	assert.Equal(t, 1, h.digests.Reads(), "only the executable is read")

	write(t, filepath.Join(data, "new"), "more")
	p, err := h.Plan(testsupport.Source(dir, yaml))
	require.NoError(t, err)
	assert.False(t, p.HasChanges(), "%+v", p.Changes)
}
