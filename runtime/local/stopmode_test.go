//go:build linux

package local

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// forwarder is a main process that, on SIGTERM, tells its child to go
// (SIGUSR1) a moment later, and exits once it has: as a master that stops
// its workers itself (gunicorn, say). Its child says which signal it got.
const forwarder = `
sh -c 'trap "echo child got TERM; exit 0" TERM; trap "echo child told by main; exit 0" USR1; echo child up; while :; do sleep 0.05; done' &
child=$!
trap 'echo main got TERM; sleep 0.1; kill -USR1 $child 2>/dev/null; wait $child; exit 0' TERM
echo main up
while :; do sleep 0.05; done`

// TestStopMode: with stopMode: group (the default) the stop signal
// reaches the main process and its child; with main, the main process
// alone, which stops its child itself, and the stop is graceful. A child
// that the main process leaves behind still gets the forced steps:
// nothing outlives the stop. In the placement's PID namespace and outside
// it.
func TestStopMode(t *testing.T) {
	for _, noNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("noNamespace=%v", noNS), func(t *testing.T) {
			l := New(Options{Timing: short, NoNamespace: noNS})
			t.Cleanup(func() { assert.NoError(t, l.Close()) })
			stop := func(mode, script string) (string, runtime.Outcome, error) {
				out := runtimetest.NewRecorder()
				p := &spec.Plugin{Name: "fwd", Run: spec.Local, StopSignal: "SIGTERM", StopMode: mode, Command: []string{"/bin/sh", "-c", script}}
				h, err := l.Start(context.Background(), runtime.Request{Project: "test", Dir: t.TempDir(), Output: out}.For(p))
				require.NoError(t, err)
				require.True(t, out.WaitFor("child up", 10*time.Second) && out.WaitFor("main up", 10*time.Second), "output: %q", out.String())
				o, err := h.Stop(context.Background())
				return out.String(), o, err
			}

			got, o, err := stop("", forwarder)
			require.NoError(t, err)
			assert.Equal(t, runtime.Exited, o)
			assert.Contains(t, got, "main got TERM")
			assert.Contains(t, got, "child got TERM", "group: the child gets the stop signal too")

			got, o, err = stop(launch.StopMain, forwarder)
			require.NoError(t, err)
			assert.Equal(t, runtime.Exited, o)
			assert.Contains(t, got, "main got TERM")
			assert.Contains(t, got, "child told by main")
			assert.NotContains(t, got, "child got TERM", "main: the stop signal reaches the main process alone")

			// A main process that exits and leaves its child: the forced
			// steps reach the child.
			leaver := strings.Replace(forwarder, "kill -USR1 $child 2>/dev/null; wait $child; ", "", 1)
			got, o, err = stop(launch.StopMain, leaver)
			assert.Equal(t, runtime.Killed, o, "the family was not gone within the graceful window")
			assert.Error(t, err)
			assert.Contains(t, got, "main got TERM")
			assert.Contains(t, got, "child got TERM", "the forced SIGTERM to the family")
		})
	}
}
