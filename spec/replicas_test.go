package spec

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReplicas: a plugin with replicas is that many plugins, NAME/1 …
// NAME/N, each with its number in GRAFT_REPLICA, a runner one with its
// own instance; they share one key for their sockets; a consumer uses
// each, with its condition; a replica's hash does not depend on the
// count, so a changed count changes no replica that stays.
func TestReplicas(t *testing.T) {
	dir := t.TempDir()
	const file = `name: shop
runners: {edge: {address: "tcp://127.0.0.1:7070", tokenFile: token}}
plugins:
  api:
    command: [./api]
    replicas: %d
    listen: [{name: http, tcp: "127.0.0.1:8080"}]
  job:
    run: runner
    runner: edge
    command: [./job]
    replicas: 2
  web:
    command: [./web]
    uses: [{plugin: api, until: started}, job]
`
	s, err := parseAt(t, dir, fmt.Sprintf(file, 3))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"api/1", "api/2", "api/3", "job/1", "job/2", "web"}, slices.Collect(maps.Keys(s.Plugins)))
	a2 := s.Plugins["api/2"]
	assert.Equal(t, "api", a2.Of)
	assert.Equal(t, 2, a2.Replica)
	assert.Equal(t, "api", a2.FileName())
	assert.Equal(t, "2", a2.Env[EnvReplica])
	assert.Equal(t, "1", s.Plugins["api/1"].Env[EnvReplica], "each its own env")
	assert.Equal(t, a2.Launch().ListenKey, s.Plugins["api/1"].Launch().ListenKey, "one key for the sockets")
	assert.NotEmpty(t, a2.Launch().ListenKey)
	assert.Equal(t, "shop.job.2", s.Plugins["job/2"].Instance)
	assert.Equal(t, "replicas:shop.job", s.Plugins["job/2"].Launch().ListenKey)
	web := s.Plugins["web"]
	assert.Equal(t, Uses{"api/1", "api/2", "api/3", "job/1", "job/2"}, web.Uses)
	assert.Equal(t, UntilStarted, web.Condition("api/3"))
	assert.Equal(t, UntilReady, web.Condition("job/1"))
	assert.Equal(t, []string{"api/1", "api/2", "api/3"}, s.Named("api"))
	assert.Equal(t, []string{"web"}, s.Named("web"))
	assert.Empty(t, s.Named("nope"))

	four, err := parseAt(t, dir, fmt.Sprintf(file, 4))
	require.NoError(t, err)
	assert.Equal(t, s.Hash("api/2"), four.WithKey(s.key).Hash("api/2"), "the count is no replica's field")
}

// TestReplicaNames: a replica's name is NAME/N with N from 1, written as
// a number; it is a file name once its / is @.
func TestReplicaNames(t *testing.T) {
	for name, ok := range map[string]bool{"api": true, "api/1": true, "api/100": true, "api/0": false, "api/01": false,
		"api/101": false, "api/x": false, "api/": false, "../api/1": false, "api/1/2": false, "API/1": false} {
		assert.Equal(t, ok, ValidPlugin(name), name)
	}
	base, i := SplitReplica("api/12")
	assert.Equal(t, "api", base)
	assert.Equal(t, 12, i)
	assert.Equal(t, "api@12", PluginFileName("api/12"))
	assert.Equal(t, "api", PluginFileName("api"))
}
