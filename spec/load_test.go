package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const designExample = `# yaml-language-server: $schema=../schema.json
name: shop
runners:
  edge:
    address: tcp://10.0.0.5:7070
    tokenFile: /etc/graft/edge.token
    connect: {lease: 15 seconds, margin: 5 seconds}
plugins:
  cache:
    command: [redis-server, --port, "6380", --save, ""]
    ready: {tcp: 127.0.0.1:6380, timeout: 10 seconds}
  api:
    command: [./bin/api, --listen, ":8080"]
    env: {CACHE_ADDR: 127.0.0.1:6380, PORT: 8080, DEBUG: true}
    dir: ./srv
    uses: [cache]
    stopSignal: SIGTERM
    retry: {delay: 1 second, factor: 2, max: 30 seconds}
  thumbs:
    run: worker
    module: ./wasm/thumbs.wasm
    uses: [api]
  writer:
    run: runner
    runner: edge
    command: [/opt/app/writer]
    uses: [api]
  relay:
    run: floating
    command: [relay-server, --port, "9530"]
    elect: {dir: /mnt/shared/graft, port: 9530}
`

func TestLoadDesignExample(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(path, []byte(designExample), 0o644))
	s, err := Load(path)
	require.NoError(t, err)

	assert.Equal(t, "shop", s.Name)
	assert.Equal(t, dir, s.Dir)
	assert.Equal(t, path, s.File)
	require.Len(t, s.Plugins, 5)
	require.Len(t, s.Runners, 1)

	edge := s.Runners["edge"]
	assert.Equal(t, "edge", edge.Name)
	assert.Equal(t, "tcp://10.0.0.5:7070", edge.Address)
	assert.Equal(t, 15*time.Second, edge.Connect.Lease.Std())

	api := s.Plugins["api"]
	assert.Equal(t, Local, api.Run, "run defaults to local")
	assert.Equal(t, map[string]string{"CACHE_ADDR": "127.0.0.1:6380", "PORT": "8080", "DEBUG": "true"}, api.Env,
		"scalars are read as the text written")
	assert.Equal(t, Uses{"cache"}, api.Uses)
	assert.Equal(t, 30*time.Second, api.Retry.Max.Std())
	assert.Equal(t, "", api.Instance, "local plugins have no stable instance name")

	cache := s.Plugins["cache"]
	assert.Equal(t, []string{"redis-server", "--port", "6380", "--save", ""}, cache.Command)
	assert.Equal(t, "SIGTERM", cache.StopSignal, "stopSignal defaults to SIGTERM")
	assert.Equal(t, 10*time.Second, cache.Ready.Timeout.Std())

	thumbs := s.Plugins["thumbs"]
	assert.Equal(t, Worker, thumbs.Run)
	assert.Equal(t, "", thumbs.StopSignal, "workers get no signal")

	writer := s.Plugins["writer"]
	assert.Equal(t, "shop.writer", writer.Instance, "instance defaults to <project>.<plugin>")

	relay := s.Plugins["relay"]
	assert.Equal(t, "shop.relay", relay.Instance)
	assert.Equal(t, Elect{Dir: "/mnt/shared/graft", Port: 9530,
		TTL: FromStd(15 * time.Second), Renew: FromStd(3 * time.Second),
		Poll: FromStd(2 * time.Second), LockStale: FromStd(15 * time.Second),
		ProbeFailures: 3, StartFailures: 3}, *relay.Elect,
		"the elect defaults of docs/semantics.md")
}

func TestDefaults(t *testing.T) {
	s, err := Parse("plugins.yaml", []byte(`
runners:
  local: {}
plugins:
  a: {command: [a], retry: {}, ready: {exec: [true]}}
  b: {command: [b], retry: {delay: 2 minutes}}
`))
	require.NoError(t, err)
	assert.Equal(t, DefaultMargin, s.Runners["local"].Connect.Margin.Std())
	assert.True(t, s.Runners["local"].Connect.Lease.IsZero(), "no lease: the runner's own applies")
	assert.Equal(t, Retry{Delay: FromStd(time.Second), Factor: 2, Max: FromStd(time.Minute)}, *s.Plugins["a"].Retry)
	assert.Equal(t, 2*time.Minute, s.Plugins["b"].Retry.Max.Std(), "max is never below delay")
	assert.Equal(t, DefaultReadyTimeout, s.Plugins["a"].Ready.Timeout.Std())
}

func TestProjectNameFromDirectory(t *testing.T) {
	for dir, want := range map[string]string{
		"shop":                  "shop",
		"My Shop.v2":            "my-shop-v2",
		"--":                    "graft",
		"Ünïcode_Stuff!":        "n-code_stuff",
		strings.Repeat("x", 80): strings.Repeat("x", 63),
	} {
		s, err := Parse(filepath.Join("/srv", dir, "plugins.yaml"), []byte("plugins: {}\n"))
		require.NoError(t, err, dir)
		assert.Equal(t, want, s.Name, dir)
		assert.True(t, validName(s.Name), s.Name)
	}
}

func TestMergeKeys(t *testing.T) {
	s, err := Parse("plugins.yaml", []byte(`
x-common: &common
  env: {LOG: info}
  stopSignal: SIGINT
plugins:
  a:
    <<: *common
    command: [a]
  b:
    <<: *common
    command: [b]
    stopSignal: SIGQUIT
`))
	// x-common is not a field of plugins.yaml: anchors live inside plugins.
	require.Error(t, err)
	assert.Contains(t, err.Error(), "plugins.yaml:2:1: x-common: unknown field")

	s, err = Parse("plugins.yaml", []byte(`
plugins:
  a: &common
    command: [a]
    env: {LOG: info}
    stopSignal: SIGINT
  b:
    <<: *common
    command: [b]
    stopSignal: SIGQUIT
`))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"LOG": "info"}, s.Plugins["b"].Env, "merged in")
	assert.Equal(t, []string{"b"}, s.Plugins["b"].Command, "explicit keys win")
	assert.Equal(t, "SIGQUIT", s.Plugins["b"].StopSignal)
}

func TestAliasExpansionIsBounded(t *testing.T) {
	// A "billion laughs": each level merges the one below ten times, so
	// expanding env would take 10^9 entries.
	var b strings.Builder
	b.WriteString("plugins:\n  p0: {command: [x], env: &m0 {A: x}}\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "  p%d: {command: [x], env: &m%d {<<: [%s]}}\n", i, i,
			strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*m%d, ", i-1), 10), ", "))
	}
	done := make(chan error, 1)
	go func() {
		_, err := Parse("plugins.yaml", []byte(b.String()))
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "document too large")
	case <-time.After(30 * time.Second):
		t.Fatal("alias expansion is not bounded")
	}
}

func TestErrorsAs(t *testing.T) {
	_, err := Parse("conf/plugins.yaml", []byte("plugins:\n  api: {command: [x], uses: [db]}\n"))
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, Error{File: "conf/plugins.yaml", Pos: Pos{2, 30}, Path: "plugins.api.uses[0]", Msg: `unknown plugin "db"`}, *e)
	assert.Equal(t, `conf/plugins.yaml:2:30: plugins.api.uses[0]: unknown plugin "db"`, err.Error())
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "plugins.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)
	var errs Errors
	assert.False(t, errors.As(err, &errs))
}

func TestSelfMerge(t *testing.T) {
	_, err := Parse("plugins.yaml", []byte("plugins:\n  p: {command: [x], env: &a {A: x, <<: *a}}\n"))
	require.Error(t, err)
	assert.Equal(t, "plugins.yaml:2:26: plugins.p.env: an alias refers to a node that contains it", err.Error())
}

// TestNullIsUnset: a field written as null, or left empty, gets its
// default, as yaml.v3 and Kubernetes read it.
func TestNullIsUnset(t *testing.T) {
	s, err := Parse("plugins.yaml", []byte(`
name:
plugins:
  a:
    run: ~
    command: [a]
    stopSignal:
    instance: null
    ready: {tcp: 127.0.0.1:80, http: ~, timeout: ~}
    elect:
  f:
    run: floating
    command: [f]
    elect: {dir: /x, port: 1, ttl: ~}
`))
	require.NoError(t, err)
	a := s.Plugins["a"]
	assert.Equal(t, Local, a.Run)
	assert.Equal(t, "SIGTERM", a.StopSignal)
	assert.Nil(t, a.Elect)
	assert.Equal(t, DefaultReadyTimeout, a.Ready.Timeout.Std())
	assert.Equal(t, DefaultElectTTL, s.Plugins["f"].Elect.TTL.Std())
	assert.Equal(t, "spec", s.Name, "a bare file name lies in the working directory, whose name is the default")
}

// TestPath: a spec's paths are relative to its file's directory, unless
// absolute.
func TestPath(t *testing.T) {
	s := &Spec{Dir: "/srv/shop"}
	assert.Equal(t, "/srv/shop/bin/api", s.Path("bin/api"))
	assert.Equal(t, "/srv/shared", s.Path("../shared"))
	assert.Equal(t, "/etc/graft/token", s.Path("/etc/graft/token"))
	assert.Equal(t, "/srv/shop", s.Path(""))
}
