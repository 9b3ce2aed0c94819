//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/asnobody"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// credScript prints the ids of its process and its user's variables,
// then sleeps until stopped.
const credScript = `grep -E '^(Uid|Gid|Groups):' /proc/self/status; echo "HOME=$HOME USER=$USER LOGNAME=$LOGNAME"; echo done; exec sleep 100`

// startAs starts credScript as the plugin p says, in a directory nobody
// can reach, with and without the placement's PID namespace, and
// returns what it printed and where its ready check wrote.
func startAs(t *testing.T, noNamespace bool, p *spec.Plugin) string {
	t.Helper()
	dir := asnobody.Dir(t)
	l := New(Options{Timing: short, NoNamespace: noNamespace})
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	out := runtimetest.NewRecorder()
	p.Name, p.Run, p.StopSignal = "cred", spec.Local, "SIGTERM"
	p.Command = []string{"/bin/sh", "-c", credScript}
	// The ready check writes who it runs as to a file: it runs as the
	// plugin does.
	p.Ready = &spec.Ready{Probe: launch.Probe{Exec: []string{"/bin/sh", "-c", `echo "$(id -u):$(id -g):$(id -G)" > ready.out`}},
		Timeout: spec.FromStd(10 * time.Second)}
	h, err := l.Start(context.Background(), runtime.Request{Project: "test", Dir: dir, Output: out}.For(p))
	require.NoError(t, err)
	t.Cleanup(func() { h.Stop(context.Background()) })
	require.True(t, out.WaitFor("done", 10*time.Second), "output: %s", out.String())
	b, err := os.ReadFile(filepath.Join(dir, "ready.out"))
	require.NoError(t, err)
	return out.String() + "ready " + strings.TrimSpace(string(b))
}

// TestUserAndGroup: a plugin with user and group runs as them, with the
// user's supplementary groups and variables, and so does its exec ready
// check; in the placement's PID namespace and outside it.
func TestUserAndGroup(t *testing.T) {
	asnobody.Need(t)
	for _, noNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("noNamespace=%v", noNS), func(t *testing.T) {
			got := startAs(t, noNS, &spec.Plugin{User: "nobody", Group: "nogroup"})
			assert.Regexp(t, `Uid:\s+65534\s+65534\s+65534\s+65534\n`, got)
			assert.Regexp(t, `Gid:\s+65534\s+65534\s+65534\s+65534\n`, got)
			assert.Regexp(t, `Groups:\s*65534\s*\n`, got, "nobody's groups, not root's")
			assert.Contains(t, got, "HOME=/nonexistent USER=nobody LOGNAME=nobody")
			assert.Contains(t, got, "ready 65534:65534:65534")
		})
	}
	t.Run("numbers", func(t *testing.T) {
		t.Setenv("USER", "from-the-host")
		got := startAs(t, false, &spec.Plugin{User: "65534", Group: "4242", Env: map[string]string{"HOME": "/srv"}, InheritEnv: []string{"USER"}})
		assert.Regexp(t, `Uid:\s+65534\s`, got)
		assert.Regexp(t, `Gid:\s+4242\s`, got)
		assert.Regexp(t, `Groups:\s*(4242 65534|65534 4242)\s*\n`, got, "the given group and the user's own")
		assert.Contains(t, got, "HOME=/srv USER=from-the-host LOGNAME=nobody", "the plugin's env and inheritEnv win over the user's")
		assert.Contains(t, got, "ready 65534:4242:")
	})
}

// TestUnknownUserFailsTheStart: a user this machine does not know (a
// runner's start: its database counts) fails the start, naming it.
func TestUnknownUserFailsTheStart(t *testing.T) {
	l := New(Options{Timing: short})
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	p := &spec.Plugin{Name: "db", Run: spec.Local, StopSignal: "SIGTERM", Command: []string{"/bin/true"}, User: "no-such-user-graft"}
	_, err := l.Start(context.Background(), runtime.Request{Project: "test", Dir: t.TempDir(), Output: runtimetest.NewRecorder()}.For(p))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `start db: unknown user "no-such-user-graft"`)
}

// TestUserCannotEnterItsDir: a plugin whose user cannot enter its
// directory fails its start saying so, in the placement's PID namespace
// and outside it.
func TestUserCannotEnterItsDir(t *testing.T) {
	asnobody.Need(t)
	dir := filepath.Join(t.TempDir(), "private")
	require.NoError(t, os.Mkdir(dir, 0o700))
	for _, noNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("noNamespace=%v", noNS), func(t *testing.T) {
			l := New(Options{Timing: short, NoNamespace: noNS})
			t.Cleanup(func() { assert.NoError(t, l.Close()) })
			p := &spec.Plugin{Name: "db", Run: spec.Local, StopSignal: "SIGTERM", Command: []string{"/bin/true"}, User: "nobody", Group: "nogroup"}
			_, err := l.Start(context.Background(), runtime.Request{Project: "test", Dir: dir, Output: runtimetest.NewRecorder()}.For(p))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "start db: start /bin/true: permission denied, as uid 65534: that user must be able to enter its directory "+dir)
		})
	}
}

// TestNonRootRefusesAnotherUser: a daemon that is not root (a runner's,
// whose start the host could not check) refuses a start as another
// user with a CredError, before it starts anything.
func TestNonRootRefusesAnotherUser(t *testing.T) {
	dir := asnobody.Dir(t)
	prog := asnobody.Program(t, dir, "local.test")
	cmd := asnobody.Command(prog, "root")
	cmd.Env = append(os.Environ(), helperEnv+"=start-as")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "start db: this daemon runs as uid 65534, not root: it cannot start a process as uid 0, gid 0 hint=true", strings.TrimSpace(string(out)))
}
