//go:build linux

package runner

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runnerapi"
)

// TestReload: a reload request runs its check beside the process and
// signals it; a failed check answers reload-failed with its output and
// signals nothing; a generation not running, a bad body, and an unknown
// session are refused. The process runs on, the same generation.
func TestReload(t *testing.T) {
	h := newHarness(t, short)
	sess := h.open(0)
	ev := h.events(sess)
	st := h.start("reload.stub", plugin(t, sess, "stubborn")) // says each SIGTERM or SIGINT it gets
	ev.ready(t)
	path := "/v1/instances/reload.stub/reload"
	reload := func(r launch.Reload, gen int64, sess string) (runnerapi.Reloaded, int, runnerapi.ErrorBody) {
		var out runnerapi.Reloaded
		status, e := h.call(http.MethodPost, path, runnerapi.Reload{Session: sess, Generation: gen, Spec: launch.Spec{Reload: &r}}, &out)
		return out, status, e
	}

	res, status, e := reload(launch.Reload{Signal: "SIGINT", Check: []string{"true"}}, st.Generation, sess)
	require.Equal(t, http.StatusOK, status, "%+v", e)
	assert.Equal(t, runnerapi.Reloaded{Instance: "reload.stub", Generation: st.Generation, PID: st.PID}, res)
	ev.until(t, 10*time.Second, func(e runnerapi.Event) bool { return e.Line == "got interrupt" })

	_, status, e = reload(launch.Reload{Signal: "SIGINT", Check: []string{"sh", "-c", "echo config rejected >&2; exit 1"}}, st.Generation, sess)
	assert.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Equal(t, runnerapi.KindReloadFailed, e.Kind)
	assert.Contains(t, e.Error, "config rejected")
	assert.Contains(t, e.Error, "nothing was signalled")

	_, status, e = reload(launch.Reload{Command: []string{"sh", "-c", "exit 4"}}, st.Generation, sess)
	assert.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Equal(t, runnerapi.KindReloadUnconfirmed, e.Kind, "the command ran: its effect is not known")
	assert.Contains(t, e.Error, "exit status 4")

	_, status, e = reload(launch.Reload{Signal: "SIGHUP"}, st.Generation+1, sess)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, runnerapi.KindNoInstance, e.Kind)
	_, status, e = reload(launch.Reload{Signal: "SIGHUP"}, st.Generation, "nope")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, runnerapi.KindNoSession, e.Kind)
	_, status, e = reload(launch.Reload{Signal: "SIGBOGUS"}, st.Generation, sess)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, e.Error, "reload.signal")
	status, e = h.call(http.MethodPost, path, runnerapi.Reload{Session: sess, Generation: st.Generation}, nil)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, e.Error, "no reload")

	assert.True(t, alive(st.PID), "every reload left it running")
	lines := 0
	for _, l := range h.status().Instances {
		if l.Instance == "reload.stub" {
			lines++
			assert.Equal(t, st.Generation, l.Generation)
		}
	}
	assert.Equal(t, 1, lines)
}
