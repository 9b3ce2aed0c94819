package spec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const hashBase = `name: shop
runners:
  edge: {address: tcp://127.0.0.1:7070, tokenFile: /etc/edge.token, connect: {lease: 15 seconds}}
plugins:
  cache: {command: [redis-server]}
  api:
    command: [./bin/api, --port, "80"]
    env: {A: "1", B: "2"}
    dir: ./srv
    uses: [cache, auth]
    ready: {tcp: 127.0.0.1:80, timeout: 5 seconds}
    retry: {delay: 1 second}
  auth: {command: [./bin/auth]}
  writer: {run: runner, runner: edge, command: [./bin/writer]}
  relay: {run: floating, command: [relay], elect: {dir: /mnt/shared, port: 9530}}
`

// testKey keys the digests of the tests that compare two parses.
var testKey = DigestKey{1, 2, 3}

func hashes(t *testing.T, src string) map[string]string {
	t.Helper()
	s, err := Parse("plugins.yaml", []byte(src))
	require.NoError(t, err, src)
	s = s.WithKey(testKey)
	out := map[string]string{}
	for name := range s.Plugins {
		out[name] = s.Hash(name)
		assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, out[name])
	}
	return out
}

// TestHashIgnoresForm: formatting, key order, comments, anchors, the order
// of uses and spelled-out defaults change no hash.
func TestHashIgnoresForm(t *testing.T) {
	base := hashes(t, hashBase)
	same := hashes(t, `# the same spec, written differently
name: shop
plugins:
  relay:
    elect: {port: 9530, dir: /mnt/shared, ttl: 15 seconds, renew: 3000 millis, probeFailures: 3}   # defaults spelled out
    command: [relay]
    run: floating
    instance: shop.relay
  writer: {command: [./bin/writer], runner: edge, run: runner, stopSignal: SIGTERM}
  auth: &auth {command: [./bin/auth]}
  api:
    uses: [auth, cache]
    retry: {factor: 2, delay: 1 second}
    ready: {timeout: 5 seconds, tcp: "127.0.0.1:80"}
    dir: "./srv"
    env:
      B: "2"
      A: 1
    command:
      - ./bin/api
      - --port
      - 80
    run: local
  cache:
    command: ['redis-server']
runners:
  edge:
    tokenFile: /etc/other.token   # the token and lease shape the session, not the process
    address: "tcp://127.0.0.1:7070"
`)
	assert.Equal(t, base, same)
}

// TestHashSeesChanges: every change that matters to a process changes its
// hash, and only its hash.
func TestHashSeesChanges(t *testing.T) {
	base := hashes(t, hashBase)
	for _, c := range []struct{ plugin, from, to string }{
		{"api", `command: [./bin/api, --port, "80"]`, `command: [./bin/api, --port, "81"]`},
		{"api", `env: {A: "1", B: "2"}`, `env: {A: "1", B: "3"}`},
		{"api", `env: {A: "1", B: "2"}`, `env: {A: "1", B: "2", C: ""}`},
		{"api", `dir: ./srv`, `dir: ./srv2`},
		{"api", `dir: ./srv`, `dir: ./srv
    inheritEnv: [AWS_REGION]`},
		{"api", `uses: [cache, auth]`, `uses: [cache]`},
		{"api", `ready: {tcp: 127.0.0.1:80, timeout: 5 seconds}`, `ready: {tcp: 127.0.0.1:80, timeout: 6 seconds}`},
		{"api", `retry: {delay: 1 second}`, `retry: {delay: 2 seconds}`},
		{"api", `dir: ./srv`, `dir: ./srv
    stopSignal: SIGINT`},
		{"cache", `cache: {command: [redis-server]}`, `cache: {command: [redis-server], run: runner}`},
		{"writer", `address: tcp://127.0.0.1:7070`, `address: tcp://127.0.0.1:7071`},
		{"writer", `writer: {run: runner,`, `writer: {run: runner, instance: other,`},
		{"relay", `port: 9530}`, `port: 9530, ttl: 20 seconds}`},
		{"relay", `dir: /mnt/shared`, `dir: /mnt/other`},
	} {
		src := strings.Replace(hashBase, c.from, c.to, 1)
		require.NotEqual(t, hashBase, src, c.from)
		got := hashes(t, src)
		for name := range base {
			if name == c.plugin {
				assert.NotEqual(t, base[name], got[name], "%s → %s changes %s", c.from, c.to, name)
			} else {
				assert.Equal(t, base[name], got[name], "%s → %s leaves %s alone", c.from, c.to, name)
			}
		}
	}
	// The project name is part of the default instance name.
	renamed := hashes(t, strings.Replace(hashBase, "name: shop", "name: shop2", 1))
	assert.NotEqual(t, base["writer"], renamed["writer"])
	assert.Equal(t, base["api"], renamed["api"])
}

func TestFieldDigestsHideValues(t *testing.T) {
	s, err := Parse("plugins.yaml", []byte("plugins:\n  api: {command: [x], env: {TOKEN: hunter2}}\n"))
	require.NoError(t, err)
	d := FieldDigests(s.Fields("api"))
	require.Contains(t, d, "env.TOKEN")
	assert.NotContains(t, d["env.TOKEN"], "hunter2")
	assert.Len(t, d["env.TOKEN"], 16)
	for k, v := range s.Fields("api") {
		assert.NotContains(t, v, "hunter2", "Fields holds no env value (%s)", k)
	}
}

// TestKeyedDigests: the digests that cover an env value depend on the key,
// and only those; under one key they are stable.
func TestKeyedDigests(t *testing.T) {
	src := []byte("name: shop\nplugins:\n  api: {command: [x], env: {PIN: \"1234\"}}\n  web: {command: [y]}\n")
	a, err := Parse("plugins.yaml", src)
	require.NoError(t, err)
	b, err := Parse("plugins.yaml", src)
	require.NoError(t, err)
	assert.NotEqual(t, a.KeyID(), b.KeyID(), "each parse gets a fresh key")
	assert.NotEqual(t, a.Hash("api"), b.Hash("api"))
	assert.NotEqual(t, FieldDigests(a.Fields("api"))["env.PIN"], FieldDigests(b.Fields("api"))["env.PIN"])
	assert.NotEqual(t, a.Digest(), b.Digest())
	assert.Equal(t, a.Hash("web"), b.Hash("web"), "a plugin without env hashes alike under any key")
	assert.Equal(t, FieldDigests(a.Fields("api"))["command"], FieldDigests(b.Fields("api"))["command"])

	k := NewDigestKey()
	a, b = a.WithKey(k), b.WithKey(k)
	assert.Equal(t, k.ID(), a.KeyID())
	assert.Equal(t, a.Hash("api"), b.Hash("api"))
	assert.Equal(t, a.Digest(), b.Digest())
	assert.Equal(t, a.Fields("api"), b.Fields("api"))

	other, err := Parse("plugins.yaml", []byte(strings.Replace(string(src), "1234", "1235", 1)))
	require.NoError(t, err)
	assert.NotEqual(t, a.Hash("api"), other.WithKey(k).Hash("api"), "a changed value changes the hash under one key")
}

func TestDigestKey(t *testing.T) {
	k := NewDigestKey()
	assert.NotEqual(t, DigestKey{}, k)
	assert.NotEqual(t, k, NewDigestKey())
	back, err := ParseDigestKey(k.Hex() + "\n")
	require.NoError(t, err)
	assert.Equal(t, k, back)
	assert.Regexp(t, `^[0-9a-f]{16}$`, k.ID())
	assert.NotContains(t, k.Hex(), k.ID())
	assert.NotContains(t, k.String(), k.Hex()[:8], "printing a key does not reveal it")
	for _, bad := range []string{"", "xyz", k.Hex()[:62]} {
		_, err := ParseDigestKey(bad)
		assert.Error(t, err, "%q", bad)
	}
}

// TestInheritEnvHash: the list of inherited names is part of the hash, in
// any order.
func TestInheritEnvHash(t *testing.T) {
	h := func(list string) string {
		s, err := Parse("plugins.yaml", []byte("plugins:\n  api: {command: [x], inheritEnv: "+list+"}\n"))
		require.NoError(t, err)
		return s.Hash("api")
	}
	assert.Equal(t, h("[A, B]"), h("[B, A]"))
	assert.NotEqual(t, h("[A, B]"), h("[A]"))
	assert.NotEqual(t, h("[A]"), h("[]"))
}

func TestDigest(t *testing.T) {
	a, err := Parse("plugins.yaml", []byte(hashBase))
	require.NoError(t, err)
	b, err := Parse("plugins.yaml", []byte(strings.Replace(hashBase, "/etc/edge.token", "/etc/new.token", 1)))
	require.NoError(t, err)
	assert.NotEqual(t, a.WithKey(testKey).Digest(), b.WithKey(testKey).Digest(), "the spec digest covers runners whole")
	c, err := Parse("plugins.yaml", []byte("# comment\n"+hashBase))
	require.NoError(t, err)
	assert.Equal(t, a.WithKey(testKey).Digest(), c.WithKey(testKey).Digest())
}
