//go:build linux

package runner

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/runnerapi"
)

// TestEnvIsWhatTheHostSends: a runner's process gets the minimal base of
// the runner's environment, the variables of it the start names in
// inheritEnv, and the env the host sends; nothing else of the runner's
// environment.
func TestEnvIsWhatTheHostSends(t *testing.T) {
	t.Setenv("RUNNER_TEST_SECRET", "hunter2")
	t.Setenv("RUNNER_TEST_REGION", "eu-west-1")
	t.Setenv("HOME", "/home/runner-test")
	h := newHarness(t, short)
	sess := h.open(0)
	ev := h.events(sess)
	req := plugin(t, sess, "env", "RUNNER_TEST_SECRET", "RUNNER_TEST_REGION", "HOME", "PATH")
	req.InheritEnv = []string{"RUNNER_TEST_REGION"}
	h.start("env", req)
	var lines []string
	for _, e := range ev.until(t, 10*time.Second, func(e runnerapi.Event) bool { return strings.HasPrefix(e.Line, "ready") }) {
		if e.Type == runnerapi.EventOutput {
			lines = append(lines, e.Line)
		}
	}
	require.Len(t, lines, 5, "%q", lines)
	assert.Equal(t, "RUNNER_TEST_SECRET unset", lines[0])
	assert.Equal(t, "RUNNER_TEST_REGION=eu-west-1", lines[1])
	assert.Equal(t, "HOME=/home/runner-test", lines[2])
	assert.True(t, strings.HasPrefix(lines[3], "PATH=/"), lines[3])

	bad := plugin(t, sess, "env")
	bad.InheritEnv = []string{"A=B"}
	_, status, body := h.tryStart("bad", bad)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body.Error, `inheritEnv[0]: bad environment variable name "A=B"`)
}
