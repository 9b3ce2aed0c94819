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

// TestUserAndGroupOnTheRunner: a start with user, group, umask and
// limits runs its process with them, and its exec ready check as the
// user, resolved in the runner's user database; a user that database
// does not know fails the start, naming it, and a bad limit is refused
// as the request's.
func TestUserAndGroupOnTheRunner(t *testing.T) {
	dir := asnobody.Dir(t)
	h := newHarness(t, short)
	sess := h.open(0)
	ev := h.events(sess)
	req := plugin(t, sess, "cred")
	req.Command = []string{"/bin/sh", "-c", `grep -E '^(Uid|Gid|Groups|Umask):' /proc/self/status; grep -E '^Max (open files|core)' /proc/self/limits; echo "USER=$USER"; echo done; exec sleep 100`}
	req.Dir, req.User, req.Group, req.Umask = dir, "nobody", "nogroup", "077"
	req.Limits = map[string]launch.Limit{"nofile": {Soft: 777, Hard: 888}, "core": {Soft: 0, Hard: 0}}
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
	assert.Regexp(t, `Umask:\s+0077`, out)
	assert.Regexp(t, `Max open files\s+777\s+888\s+files`, out)
	assert.Regexp(t, `Max core file size\s+0\s+0\s+bytes`, out)
	b, err := os.ReadFile(filepath.Join(dir, "ready.out"))
	require.NoError(t, err)
	assert.Equal(t, "65534", strings.TrimSpace(string(b)), "the ready check runs as the plugin's user")

	bad := plugin(t, sess, "cooperative")
	bad.User = "no-such-user-graft"
	_, status, body := h.tryStart("bad", bad)
	assert.Equal(t, 422, status, "a start that failed")
	assert.Contains(t, body.Error, `unknown user "no-such-user-graft"`)

	bad = plugin(t, sess, "cooperative")
	bad.Limits, bad.Umask = map[string]launch.Limit{"nofiles": {Soft: 1, Hard: 1}, "core": {Soft: 2, Hard: 1}}, "9"
	_, status, body = h.tryStart("bad", bad)
	assert.Equal(t, 400, status)
	assert.Contains(t, body.Error, `umask: bad umask "9"`)
	assert.Contains(t, body.Error, `limits.core: soft 2 is above hard 1`)
	assert.Contains(t, body.Error, `limits.nofiles: unknown resource limit "nofiles"`)
}
