//go:build linux

package local

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// envOf starts a shell that prints its environment, under a placement
// whose daemon's environment is parent, and returns what it printed.
func envOf(t *testing.T, parent []string, p *spec.Plugin) map[string]string {
	t.Helper()
	l := New(Options{Timing: short, Env: parent})
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	out := runtimetest.NewRecorder()
	p.Name, p.Run, p.StopSignal = "env", spec.Local, "SIGTERM"
	p.Command = []string{"/bin/sh", "-c", "env"}
	h, err := l.Start(context.Background(), runtime.Request{Project: "test", Dir: t.TempDir(), Output: out}.For(p))
	require.NoError(t, err)
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("env did not exit")
	}
	env := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	delete(env, "PWD") // the shell's own
	delete(env, "SHLVL")
	delete(env, "_")
	return env
}

// TestEnvIsWhatTheFileSays: a plugin gets the minimal base of its host's
// environment, what its inheritEnv names, its env and graft's variables;
// nothing else of the host's, such as the secrets of the shell that
// started it.
func TestEnvIsWhatTheFileSays(t *testing.T) {
	parent := []string{"SECRET=hunter2", "PATH=" + os.Getenv("PATH"), "HOME=/home/op", "LANG=C.UTF-8",
		"GRAFT_TEST_MARK=m", "AWS_REGION=eu-west-1", "AWS_SECRET_ACCESS_KEY=k"}
	env := envOf(t, parent, &spec.Plugin{Env: map[string]string{"OWN": "1"}, InheritEnv: []string{"AWS_REGION", "NOT_SET"}})
	assert.Equal(t, []string{"AWS_REGION", "GRAFT_GENERATION", "GRAFT_INSTANCE_ID", "GRAFT_PLUGIN", "GRAFT_TEST_MARK", "HOME", "LANG", "OWN", "PATH"},
		slices.Sorted(maps.Keys(env)))
	assert.Equal(t, "eu-west-1", env["AWS_REGION"])
	assert.Equal(t, "/home/op", env["HOME"])
	assert.Equal(t, "1", env["OWN"])
	assert.Equal(t, "env", env["GRAFT_PLUGIN"])

	env = envOf(t, []string{"SECRET=hunter2"}, &spec.Plugin{})
	assert.Equal(t, runtime.DefaultPath, env["PATH"], "no PATH in the host's environment: the default")
	assert.NotContains(t, env, "SECRET")
}
