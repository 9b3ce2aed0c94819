//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testprog"
)

// tmuxServer is a tmux server of a test's own (its socket in a temp dir),
// whose panes run an interactive bash in dir, for what only a terminal
// shows: completion on Tab, a view redrawn in place. The test's end kills
// the server and everything its panes run.
type tmuxServer struct {
	t    *testing.T
	sock string
}

// newTmux starts a tmux server with one 160×40 window running bash in
// dir, with graft's test environment.
func newTmux(t *testing.T, dir string) *tmuxServer {
	t.Helper()
	testprog.Need(t, "bash", "bash")
	return newTmuxShell(t, dir, "bash", "--norc", "--noprofile")
}

// newTmuxShell is newTmux with another shell, shell its command line.
func newTmuxShell(t *testing.T, dir string, shell ...string) *tmuxServer {
	t.Helper()
	testprog.Need(t, "tmux", "tmux")
	tmp, err := os.MkdirTemp("", "tmux") // short: a socket's path is bounded
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(tmp) })
	s := &tmuxServer{t: t, sock: filepath.Join(tmp, "s")}
	t.Cleanup(func() { exec.Command("tmux", "-S", s.sock, "kill-server").Run() })
	s.run(append([]string{"-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "160", "-y", "40", "-c", dir,
		"env", "PS1=$ ", "GORACE=atexit_sleep_ms=0", "GRAFT_TEST_RUN=" + dir, "NO_COLOR="}, shell...)...)
	return s
}

// run runs a tmux command against the server and returns its output.
func (s *tmuxServer) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.sock}, args...)...).CombinedOutput()
	require.NoError(s.t, err, "tmux %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// split opens a second pane, running bash in dir like the first, and
// returns its id.
func (s *tmuxServer) split(dir string) string {
	s.t.Helper()
	return strings.TrimSpace(s.run("split-window", "-d", "-v", "-P", "-F", "#{pane_id}", "-t", "t", "-c", dir,
		"env", "PS1=$ ", "GORACE=atexit_sleep_ms=0", "GRAFT_TEST_RUN="+dir, "bash", "--norc", "--noprofile"))
}

// send types keys into pane (tmux's key names: Enter, Tab, C-c).
func (s *tmuxServer) send(pane string, keys ...string) {
	s.t.Helper()
	s.run(append([]string{"send-keys", "-t", pane}, keys...)...)
}

// capture is what pane shows now.
func (s *tmuxServer) capture(pane string) string {
	s.t.Helper()
	return s.run("capture-pane", "-p", "-t", pane)
}

// waitFor waits until pane shows a match of re, at most timeout, and
// returns what it shows.
func (s *tmuxServer) waitFor(pane string, re *regexp.Regexp, timeout time.Duration) string {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		screen := s.capture(pane)
		if re.MatchString(screen) {
			return screen
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("pane %s does not show %s within %s; it shows:\n%s", pane, re, timeout, screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
