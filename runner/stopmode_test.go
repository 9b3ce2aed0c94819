//go:build linux

package runner

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runnerapi"
)

// TestStopModeMain: a runner plugin with stopMode: main gets its stop
// signal in its main process alone, which stops its child itself: the
// child never sees the signal, and the stop is graceful.
func TestStopModeMain(t *testing.T) {
	h := newHarness(t, short)
	sess := h.open(0)
	ev := h.events(sess)
	req := plugin(t, sess, "forwarder")
	req.Command = []string{"/bin/sh", "-c", `
sh -c 'trap "echo child got TERM; exit 0" TERM; trap "echo child told by main; exit 0" USR1; echo child up; while :; do sleep 0.05; done' &
child=$!
trap 'echo main got TERM; sleep 0.1; kill -USR1 $child; wait $child; exit 0' TERM
echo main up
while :; do sleep 0.05; done`}
	req.StopMode = launch.StopMain
	st := h.start("stopmode.main", req)
	up := map[string]bool{}
	ev.until(t, 10*time.Second, func(e runnerapi.Event) bool {
		up[e.Line] = true
		return up["main up"] && up["child up"] // in either order
	})
	res, status, e := h.stop(sess, "stopmode.main", st.Generation, 5*time.Second)
	require.Equal(t, http.StatusOK, status, "%+v", e)
	assert.Equal(t, runnerapi.Exited, res.Outcome)
	tail := strings.Join(res.Exit.Tail, "\n")
	assert.Contains(t, tail, "main got TERM")
	assert.Contains(t, tail, "child told by main")
	assert.NotContains(t, tail, "child got TERM")
}
