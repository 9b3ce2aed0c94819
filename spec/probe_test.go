package spec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/launch"
)

// TestGRPCProbe: a grpc check, with the service it asks after, loads as
// written, reaches the process every placement runs (Launch), and is
// part of the plugin: another service, or none, is another plugin.
func TestGRPCProbe(t *testing.T) {
	const src = `name: shop
plugins:
  api:
    command: [./bin/api]
    ready: {grpc: "127.0.0.1:2379"}
    health: {grpc: 127.0.0.1:2379, service: x}
`
	s, err := Parse("plugins.yaml", []byte(src))
	require.NoError(t, err)
	api := s.Plugins["api"]
	assert.Equal(t, launch.Probe{GRPC: "127.0.0.1:2379"}, api.Ready.Probe)
	assert.Equal(t, launch.Probe{GRPC: "127.0.0.1:2379", Service: "x"}, api.Health.Probe)
	l := api.Launch()
	assert.Equal(t, "grpc", l.Ready.Kind())
	assert.Equal(t, launch.Probe{GRPC: "127.0.0.1:2379", Service: "x"}, l.Health.Probe)
	require.NoError(t, l.Validate())

	base := hashes(t, src)["api"]
	for _, health := range []string{`{grpc: 127.0.0.1:2379, service: y}`, `{grpc: 127.0.0.1:2379}`, `{grpc: 127.0.0.1:2380, service: x}`} {
		other := hashes(t, `name: shop
plugins:
  api:
    command: [./bin/api]
    ready: {grpc: "127.0.0.1:2379"}
    health: `+health+"\n")["api"]
		assert.NotEqual(t, base, other, health)
	}
	same := hashes(t, `name: shop
plugins:
  api:
    command: [./bin/api]
    ready: {grpc: "127.0.0.1:2379", service: ""}
    health: {service: x, grpc: "127.0.0.1:2379"}
`)["api"]
	assert.Equal(t, base, same, "service written empty is the server as a whole, as when it is not written")
}
