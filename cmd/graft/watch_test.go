//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/hostapi"
)

// watchProject is a project with its host up and web running; the test's
// end takes the host down, or kills it and its plugins when it cannot.
func watchProject(t *testing.T) (dir string, graft func(args ...string) string) {
	t.Helper()
	dir = t.TempDir()
	t.Cleanup(func() { cleanup(dir) })
	graft = func(args ...string) string {
		t.Helper()
		cmd := exec.Command("graft", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0", "GRAFT_TEST_RUN="+dir)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "graft %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	writePlugins(t, dir, "web: {command: [plug, serve, web]}\n")
	graft("apply")
	t.Cleanup(func() { graft("down") })
	return dir, graft
}

func writePlugins(t *testing.T, dir, plugins string) {
	t.Helper()
	body := "name: shop\nplugins:\n  " + strings.ReplaceAll(strings.TrimSpace(plugins), "\n", "\n  ") + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(body), 0o644))
}

// instanceOf is plugin's instance, short as the table shows it.
func instanceOf(t *testing.T, status, plugin string) string {
	t.Helper()
	var st hostapi.Status
	require.NoError(t, json.Unmarshal([]byte(status), &st))
	for _, r := range st.Plugins {
		if r.Name == plugin {
			return shortID(r.Instance)
		}
	}
	t.Fatalf("no plugin %s in %s", plugin, status)
	return ""
}

// TestStatusWatchTerminal: graft status --watch on a terminal (a tmux
// pane) shows the table, and when an apply from another pane replaces
// web and starts api, redraws it with web's new instance and api, from
// the host's changes; Ctrl-C ends it.
func TestStatusWatchTerminal(t *testing.T) {
	dir, graft := watchProject(t)
	old := instanceOf(t, graft("status", "--json"), "web")
	tm := newTmux(t, dir)
	tm.send("t", "graft status --watch", "Enter")
	tm.waitFor("t", regexp.MustCompile(`(?m)^web\s+local\s+running\s+`+old+`\s+1\s`), 15*time.Second)
	tm.waitFor("t", regexp.MustCompile(`Ctrl-C to stop`), 5*time.Second)

	other := tm.split(dir)
	writePlugins(t, dir, "web: {command: [plug, serve, web, v2]}\napi: {command: [plug, serve, api], uses: [web]}\n")
	tm.send(other, "graft apply", "Enter")
	tm.waitFor(other, regexp.MustCompile(`Apply complete`), 30*time.Second)
	now := instanceOf(t, graft("status", "--json"), "web")
	require.NotEqual(t, old, now)
	screen := tm.waitFor("t", regexp.MustCompile(`(?m)^web\s+local\s+running\s+`+now+`\s`), 15*time.Second)
	assert.Regexp(t, `(?m)^api\s+local\s+running\s+\S+\s+1\s`, screen)
	assert.NotContains(t, screen, old, "the table is redrawn, not appended to")
	assert.Equal(t, 1, strings.Count(screen, "PLUGIN"), "one table on the screen:\n%s", screen)

	tm.send("t", "C-c")
	tm.waitFor("t", regexp.MustCompile(`\$\s*\z`), 10*time.Second)
	assert.Equal(t, "bash\n", tm.run("display-message", "-p", "-t", "t", "#{pane_current_command}"), "the watch ended")
}

// TestStatusWatchPipe: on a pipe, graft status --watch prints a line per
// plugin as it is, then a line per change as the host reports it: the
// apply under way, web's new instance, api started, and the apply's end;
// it ends on SIGINT with status 0.
func TestStatusWatchPipe(t *testing.T) {
	dir, graft := watchProject(t)
	old := instanceOf(t, graft("status", "--json"), "web")
	cmd := exec.Command("graft", "status", "--watch")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0", "GRAFT_TEST_RUN="+dir)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(stdout); sc.Scan(); {
			lines <- sc.Text()
		}
	}()
	next := func(re string) string {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				require.True(t, ok, "the watch ended before a line matching %s", re)
				if regexp.MustCompile(re).MatchString(l) {
					return l
				}
			case <-timeout:
				t.Fatalf("no line matching %s", re)
			}
		}
	}
	first := next(`^\d\d:\d\d:\d\d web: `)
	assert.Contains(t, first, "web: running, local, instance "+old+", generation 1")

	writePlugins(t, dir, "web: {command: [plug, serve, web, v2]}\napi: {command: [plug, serve, api], uses: [web]}\n")
	graft("apply")
	now := instanceOf(t, graft("status", "--json"), "web")
	next(`^\d\d:\d\d:\d\d host: applying: graft apply by `)
	// Until the apply ends: the changes of web and api, whose lines for
	// one moment come in the order of their names. (Which passing states,
	// such as stopping, show depends on how fast the apply goes: the host
	// gathers the changes of a few milliseconds into one status.)
	var during []string
	for l := ""; !strings.HasSuffix(l, " host: the apply ended"); {
		l = next(``)
		during = append(during, l)
	}
	all := strings.Join(during, "\n")
	assert.Regexp(t, `(?m)^\d\d:\d\d:\d\d web: running, local, instance `+now+`, generation 1, pid [1-9]\d*, restarts 0, last stop Exited$`, all)
	assert.Regexp(t, `(?m)^\d\d:\d\d:\d\d api: running, local, instance \S+, generation 1, pid [1-9]\d*, restarts 0, last stop -$`, all)
	assert.Regexp(t, `(?m)^\d\d:\d\d:\d\d host: the apply ended\z`, all, "the apply ends last")

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	for range lines {
	}
	require.NoError(t, cmd.Wait(), "Ctrl-C ends a watch with status 0")
}
