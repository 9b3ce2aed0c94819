//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/graftland/graft/internal/asnobody"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// setupScript prints its process's umask, ids and limits, then sleeps
// until stopped.
const setupScript = `grep -E '^(Umask|Uid):' /proc/self/status; cat /proc/self/limits; echo done; exec sleep 100`

// TestUmaskAndLimits: a plugin's umask and limits are its process's from
// its start, and its exec ready check's; with user, a hard limit above
// the daemon's own is raised before the ids are dropped; in the
// placement's PID namespace and outside it.
func TestUmaskAndLimits(t *testing.T) {
	asnobody.Need(t)
	var own unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &own))
	above := own.Max
	if launch.CanRaiseLimits() {
		above++ // only a daemon with CAP_SYS_RESOURCE can grant it, before the ids are dropped
	}
	for _, noNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("noNamespace=%v", noNS), func(t *testing.T) {
			dir := asnobody.Dir(t)
			l := New(Options{Timing: short, NoNamespace: noNS})
			t.Cleanup(func() { assert.NoError(t, l.Close()) })
			out := runtimetest.NewRecorder()
			p := &spec.Plugin{Name: "limits", Run: spec.Local, StopSignal: "SIGTERM", User: "nobody",
				Command: []string{"/bin/sh", "-c", setupScript}, Umask: "027",
				Limits: map[string]spec.Limit{
					"nofile": {Soft: 4242, Hard: launch.LimitValue(above)},
					"core":   {Soft: 0, Hard: 0},
					"nproc":  {Soft: 300, Hard: 400},
					"stack":  {Soft: launch.Unlimited, Hard: launch.Unlimited},
				},
				Ready: &spec.Ready{Probe: launch.Probe{Exec: []string{"/bin/sh", "-c", `echo "check umask $(umask) nofile $(ulimit -n)" > check.out`}},
					Timeout: spec.FromStd(10 * time.Second)},
			}
			h, err := l.Start(context.Background(), runtime.Request{Project: "test", Dir: dir, Output: out}.For(p))
			require.NoError(t, err)
			t.Cleanup(func() { h.Stop(context.Background()) })
			require.True(t, out.WaitFor("done", 10*time.Second), "output: %s", out.String())
			check, err := os.ReadFile(filepath.Join(dir, "check.out")) // written by the ready check, which has passed
			require.NoError(t, err)
			got := out.String() + string(check)
			assert.Regexp(t, `Umask:\s+0027\n`, got)
			assert.Regexp(t, `Uid:\s+65534\s+65534\s+65534\s+65534\n`, got)
			assert.Regexp(t, fmt.Sprintf(`Max open files\s+4242\s+%d\s+files`, above), got)
			assert.Regexp(t, `Max core file size\s+0\s+0\s+bytes`, got)
			assert.Regexp(t, `Max processes\s+300\s+400\s+processes`, got)
			assert.Regexp(t, `Max stack size\s+unlimited\s+unlimited\s+bytes`, got)
			assert.Contains(t, got, "check umask 0027 nofile 4242", "the ready check runs with them too")
			assert.NotContains(t, got, "graft-setup")
		})
	}
}

// TestLimitsLeaveOthersAlone: a plugin without limits gets the daemon's
// own file limit (the soft one it started with, not the one Go raised),
// and one with limits only those it names.
func TestLimitsLeaveOthersAlone(t *testing.T) {
	l := New(Options{Timing: short})
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	limitsOf := func(ls map[string]spec.Limit) string {
		out := runtimetest.NewRecorder()
		p := &spec.Plugin{Name: "limits", Run: spec.Local, StopSignal: "SIGTERM", Limits: ls,
			Command: []string{"/bin/sh", "-c", "cat /proc/self/limits"}}
		h, err := l.Start(context.Background(), runtime.Request{Project: "test", Dir: t.TempDir(), Output: out}.For(p))
		require.NoError(t, err)
		<-h.Done()
		return out.String()
	}
	plain := limitsOf(nil)
	limited := limitsOf(map[string]spec.Limit{"core": {Soft: 0, Hard: 0}})
	files := regexp.MustCompile(`Max open files.*`)
	assert.Equal(t, files.FindString(plain), files.FindString(limited), "the file limit is the daemon's, as without limits")
	assert.Regexp(t, `Max core file size\s+0\s+0\s+bytes`, limited)
}

// TestNonRootCannotRaiseALimit: a daemon that is not root refuses a hard
// limit above its own (a runner's start) before it starts anything.
func TestNonRootCannotRaiseALimit(t *testing.T) {
	dir := asnobody.Dir(t)
	prog := asnobody.Program(t, dir, "local.test")
	cmd := asnobody.Command(prog, "unlimited")
	cmd.Env = append(os.Environ(), helperEnv+"=start-limited")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `^start db: limits.nofile: hard unlimited is above this process's own hard limit \d+, which it cannot raise: it is not root$`, strings.TrimSpace(string(out)))
}
