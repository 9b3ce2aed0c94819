//go:build linux

package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/asnobody"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runnerapi"
)

// TestUserAndGroupOnTheRunner: a start with user and group runs its
// process, and its exec ready check, as them, resolved in the runner's
// user database; a user that database does not know fails the start,
// naming it.
func TestUserAndGroupOnTheRunner(t *testing.T) {
	dir := asnobody.Dir(t)
	h := newHarness(t, short)
	sess := h.open(0)
	ev := h.events(sess)
	req := plugin(t, sess, "cred")
	req.Command = []string{"/bin/sh", "-c", `grep -E '^(Uid|Gid|Groups):' /proc/self/status; echo "USER=$USER"; echo done; exec sleep 100`}
	req.Dir, req.User, req.Group = dir, "nobody", "nogroup"
	req.Ready = &launch.Ready{Probe: launch.Probe{Exec: []string{"/bin/sh", "-c", `id -u > ready.out`}}, Timeout: launch.Duration(10 * time.Second)}
	h.start("cred", req)
	var lines []string
	for _, e := range ev.until(t, 10*time.Second, func(e runnerapi.Event) bool { return e.Line == "done" }) {
		if e.Type == runnerapi.EventOutput {
			lines = append(lines, e.Line)
		}
	}
	out := strings.Join(lines, "\n")
	assert.Regexp(t, `Uid:\s+65534\s+65534\s+65534\s+65534`, out)
	assert.Regexp(t, `Gid:\s+65534\s+65534\s+65534\s+65534`, out)
	assert.Regexp(t, `Groups:\s*65534\s*(\n|$)`, out)
	assert.Contains(t, out, "USER=nobody")
	b, err := os.ReadFile(filepath.Join(dir, "ready.out"))
	require.NoError(t, err)
	assert.Equal(t, "65534", strings.TrimSpace(string(b)), "the ready check runs as the plugin's user")

	bad := plugin(t, sess, "cooperative")
	bad.User = "no-such-user-graft"
	_, status, body := h.tryStart("bad", bad)
	assert.NotEqual(t, 200, status)
	assert.Contains(t, body.Error, `unknown user "no-such-user-graft"`)
}
