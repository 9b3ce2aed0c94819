//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testprog"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// buffered prints one line through python3's stdio, which buffers it
// unless its stdout is a terminal, and then sleeps.
var buffered = []string{"python3", "-c", `print("ready now"); import time; time.sleep(60)`}

// TestTTYLineBuffers: with tty, a program that buffers its stdio unless
// on a terminal prints its line at once, and ready: {log} sees it;
// without, the line stays in its buffer and the ready check times out.
// In the placement's PID namespace and outside it.
func TestTTYLineBuffers(t *testing.T) {
	testprog.Need(t, "python3", "python3")
	for _, noNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("noNamespace=%v", noNS), func(t *testing.T) {
			l := New(Options{Timing: short, NoNamespace: noNS})
			t.Cleanup(func() { assert.NoError(t, l.Close()) })
			start := func(tty bool) (*runtimetest.Recorder, runtime.Handle, error) {
				out := runtimetest.NewRecorder()
				p := &spec.Plugin{Name: "buffered", Run: spec.Local, StopSignal: "SIGTERM", Command: buffered, TTY: tty,
					Ready: &spec.Ready{Log: "^ready now$", Timeout: spec.FromStd(2 * time.Second)}}
				h, err := l.Start(context.Background(), runtime.Request{Project: "test", Dir: t.TempDir(), Output: out}.For(p))
				return out, h, err
			}

			out, h, err := start(true)
			require.NoError(t, err, "output: %q", out.String())
			assert.Equal(t, "ready now\n", out.String(), "a line as through a pipe: no carriage return")
			_, err = h.Stop(context.Background())
			assert.NoError(t, err)

			out, _, err = start(false)
			var se *runtime.StartError
			require.True(t, errors.As(err, &se), "want a start error, got %v", err)
			assert.Contains(t, se.Reason, "not ready after 2 seconds")
			assert.Empty(t, out.String(), "the line stayed in python's buffer")
		})
	}
}

// TestTTYOutput: with tty, stdout and stderr are a terminal, stdin is
// not (it stays /dev/null); every line the plugin prints before it exits
// reaches its output and its exit's tail, the last ones included; and
// neither the terminal nor anything else of its starts stays open.
func TestTTYOutput(t *testing.T) {
	for _, noNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("noNamespace=%v", noNS), func(t *testing.T) {
			l := New(Options{Timing: short, NoNamespace: noNS})
			t.Cleanup(func() { assert.NoError(t, l.Close()) })
			// A first start makes what the placement keeps (its
			// namespace's init, say): the count is taken after it.
			warm, err := l.Start(context.Background(), runtime.Request{Project: "test", Dir: t.TempDir(), Output: runtimetest.NewRecorder()}.For(
				&spec.Plugin{Name: "warm", Run: spec.Local, StopSignal: "SIGTERM", Command: []string{"/bin/true"}}))
			require.NoError(t, err)
			<-warm.Done()
			fds := openFDs(t)
			for i := range 3 {
				out := runtimetest.NewRecorder()
				p := &spec.Plugin{Name: "tty", Run: spec.Local, StopSignal: "SIGTERM", TTY: true, Command: []string{"/bin/sh", "-c",
					`[ -t 0 ] || echo "stdin is no terminal"; [ -t 1 ] && echo "stdout is a terminal"; [ -t 2 ] && echo "stderr is a terminal" >&2
					i=0; while [ $i -lt 2000 ]; do echo "line $i"; i=$((i+1)); done; exit 3`}}
				h, err := l.Start(context.Background(), runtime.Request{Project: "test", Dir: t.TempDir(), Output: out}.For(p))
				require.NoError(t, err)
				select {
				case <-h.Done():
				case <-time.After(10 * time.Second):
					t.Fatalf("start %d: still running: %q", i, out.String())
				}
				exit := h.Exit()
				assert.Equal(t, 3, exit.Code)
				got := out.String()
				assert.True(t, strings.HasPrefix(got, "stdin is no terminal\nstdout is a terminal\nstderr is a terminal\nline 0\n"), "start %d: %.200q", i, got)
				assert.True(t, strings.HasSuffix(got, "\nline 1998\nline 1999\n"), "start %d: every line, the last included: %q", i, got[max(0, len(got)-200):])
				assert.NotContains(t, got, "\r")
				assert.Equal(t, 2000+3, strings.Count(got, "\n"), "start %d", i)
				if assert.NotEmpty(t, exit.Tail) {
					assert.Equal(t, "line 1999", exit.Tail[len(exit.Tail)-1])
				}
			}
			assert.Eventually(t, func() bool { return openFDs(t) <= fds }, 5*time.Second, 10*time.Millisecond,
				"every terminal closed: %d open files before, %d after", fds, openFDs(t))
		})
	}
}

// openFDs counts this process's open files.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}
