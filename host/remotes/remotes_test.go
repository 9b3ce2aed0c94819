package remotes

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// load parses yaml as plugins.yaml in dir.
func load(t *testing.T, dir, yaml string) *spec.Spec {
	t.Helper()
	s, err := spec.ParseIn(filepath.Join(dir, "plugins.yaml"), dir, []byte(yaml))
	require.NoError(t, err)
	return s
}

func newRegistry(t *testing.T) *Registry {
	g := New(Options{StateDir: t.TempDir(), HostID: "test", Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { assert.NoError(t, g.Close()) })
	return g
}

const twoRunners = `
runners:
  edge: {address: "tcp://127.0.0.1:1", tokenFile: edge.token}
plugins:
  a: {run: runner, runner: edge, command: [sleep, "60"]}
  b: {run: runner, runner: edge, command: [sleep, "60"]}
`

// TestOnePlacementPerRunner: the plugins of one runner share its
// placement, which a new token updates in place rather than replaces;
// another address is another placement, and the old one is pruned once
// no apply names it and no plugin uses it.
func TestOnePlacementPerRunner(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "edge.token")
	require.NoError(t, os.WriteFile(token, []byte("first\n"), 0o600))
	g := newRegistry(t)
	s := load(t, dir, twoRunners)
	g.Refresh(s)
	a, err := g.Placement(s, s.Plugins["a"])
	require.NoError(t, err)
	b, err := g.Placement(s, s.Plugins["b"])
	require.NoError(t, err)
	assert.Same(t, a, b, "one runner, one placement")

	require.NoError(t, os.WriteFile(token, []byte("second\n"), 0o600))
	g.Refresh(s)
	again, err := g.Placement(s, s.Plugins["a"])
	require.NoError(t, err)
	assert.Same(t, a, again, "a new token updates the placement in place")

	moved := load(t, dir, `
runners:
  edge: {address: "tcp://127.0.0.1:2", tokenFile: edge.token}
plugins:
  a: {run: runner, runner: edge, command: [sleep, "60"]}
`)
	g.Refresh(moved)
	m, err := g.Placement(moved, moved.Plugins["a"])
	require.NoError(t, err)
	assert.NotSame(t, a, m, "another address, another placement")
	g.Prune(map[runtime.Placement]bool{a: true})
	assert.Len(t, g.byKey, 2, "a placement a plugin still uses is kept")
	g.Prune(map[runtime.Placement]bool{})
	assert.Len(t, g.byKey, 1, "one no apply names and no plugin uses is ended")
}

// TestSettingsErrorsNameTheFile: a token or certificate that cannot be
// read fails the runner's placement with the runner's name and the file.
func TestSettingsErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	g := newRegistry(t)
	s := load(t, dir, twoRunners)
	_, err := g.Placement(s, s.Plugins["a"])
	require.Error(t, err)
	assert.Contains(t, err.Error(), "runner edge: token")
	assert.Contains(t, err.Error(), filepath.Join(dir, "edge.token"))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.pem"), []byte("not a certificate"), 0o600))
	s = load(t, dir, `
runners:
  edge: {address: "tcp://127.0.0.1:1", tls: {ca: ca.pem}}
plugins:
  a: {run: runner, runner: edge, command: [sleep, "60"]}
`)
	_, err = g.Placement(s, s.Plugins["a"])
	require.Error(t, err)
	assert.Contains(t, err.Error(), "runner edge: tls: ca.pem: no PEM certificate in it")
}

// TestSettingsReadOncePerApply: the settings of a runner are read when an
// apply begins (Refresh), and every start of that apply uses them: a
// token file removed meanwhile fails no start of it, and the next apply
// reads the files again, and says what is wrong.
func TestSettingsReadOncePerApply(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "edge.token")
	require.NoError(t, os.WriteFile(token, []byte("first\n"), 0o600))
	g := newRegistry(t)
	s := load(t, dir, twoRunners)
	g.Refresh(s)
	require.NoError(t, os.Remove(token))
	for _, name := range []string{"a", "b", "a"} {
		_, err := g.Placement(s, s.Plugins[name])
		require.NoError(t, err, "the apply's settings, read once")
	}

	next := load(t, dir, twoRunners)
	g.Refresh(next)
	_, err := g.Placement(next, next.Plugins["a"])
	require.Error(t, err, "the next apply reads the files again")
	assert.Contains(t, err.Error(), "runner edge: token")
}

// TestInsecurePlaintextIsASetting: a runner's insecurePlaintext reaches
// its placement's config, and an apply that changes it updates the
// placement in place, as a new token does.
func TestInsecurePlaintextIsASetting(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "edge.token"), []byte("tok\n"), 0o600))
	g := newRegistry(t)
	plain := load(t, dir, twoRunners)
	insecure := load(t, dir, `
runners:
  edge: {address: "tcp://127.0.0.1:1", tokenFile: edge.token, insecurePlaintext: true}
plugins:
  a: {run: runner, runner: edge, command: [sleep, "60"]}
`)
	cfg, settings, err := g.config(plain, "edge")
	require.NoError(t, err)
	assert.False(t, cfg.InsecurePlaintext)
	cfg, insecureSettings, err := g.config(insecure, "edge")
	require.NoError(t, err)
	assert.True(t, cfg.InsecurePlaintext)
	assert.NotEqual(t, settings, insecureSettings)

	g.Refresh(plain)
	a, err := g.Placement(plain, plain.Plugins["a"])
	require.NoError(t, err)
	g.Refresh(insecure)
	again, err := g.Placement(insecure, insecure.Plugins["a"])
	require.NoError(t, err)
	assert.Same(t, a, again, "updated in place")
	assert.NotEqual(t, settings, g.byKey["edge\x00tcp://127.0.0.1:1"].settings, "with the new settings")
}
