package worker

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

// TestEnvironIsTheFiles: a module sees its env, what its inheritEnv names
// of the host's environment, and graft's identity; nothing else of the
// host's, not even PATH.
func TestEnvironIsTheFiles(t *testing.T) {
	t.Setenv("WORKER_TEST_SECRET", "hunter2")
	t.Setenv("WORKER_TEST_REGION", "eu-west-1")
	p := &spec.Plugin{Name: "thumbs", Env: map[string]string{"OWN": "1"}, InheritEnv: []string{"WORKER_TEST_REGION", "NOT_SET"}}
	env := environ(runtime.Request{Env: map[string]string{"GRAFT_ADDR_KV": "127.0.0.1:1"}}.For(p), runtime.Identity{ID: "id", Generation: 1})
	assert.Equal(t, map[string]string{
		"WORKER_TEST_REGION": "eu-west-1",
		"OWN":                "1",
		"GRAFT_ADDR_KV":      "127.0.0.1:1",
		"GRAFT_INSTANCE_ID":  "id",
		"GRAFT_GENERATION":   "1",
		"GRAFT_PLUGIN":       "thumbs",
	}, env)
}
