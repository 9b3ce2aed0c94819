//go:build linux

package host

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
)

// waitingSpec is a one-shot that writes its pid and runs until the file
// go appears in dir (never, unless the test makes it), with once: extra,
// and an api that waits for its completion.
func waitingSpec(dir, once string) string {
	sh := "echo $$$$ > " + filepath.Join(dir, "pid") + "; while [ ! -e " + filepath.Join(dir, "go") + " ]; do sleep 0.05; done"
	return "name: shop\nplugins:\n" +
		"  migrate: {command: [sh, -c, '" + sh + "'], once: " + once + "}\n" +
		"  api: {command: [sleep, '60'], uses: [{plugin: migrate, until: completed}]}\n"
}

// pidIn waits for the one-shot of waitingSpec to run, and returns its
// pid as this process sees it: the one it writes is its pid in the
// host's PID namespace.
func pidIn(t *testing.T, dir string) int {
	t.Helper()
	mark := filepath.Join(dir, "go")
	var pid int
	require.Eventually(t, func() bool {
		if _, err := os.Stat(filepath.Join(dir, "pid")); err != nil {
			return false
		}
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, f := range procs {
			if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), mark) {
				pid, _ = strconv.Atoi(filepath.Base(filepath.Dir(f)))
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond)
	return pid
}

// TestOnceTimeout: a one-shot that does not complete within its
// once.timeout is stopped, its step fails naming the timeout, what waits
// on it does not start, and the apply gives the lock back.
func TestOnceTimeout(t *testing.T) {
	dir := t.TempDir()
	h := open(t, filepath.Join(dir, ".graft"))
	defer h.Shutdown(context.Background())
	began := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, waitingSpec(dir, "{timeout: 300 millis}"))}, Report{})
		done <- err
	}()
	pid := pidIn(t, dir)
	err := <-done
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did not complete within 300 millis (once.timeout)")
	assert.Less(t, time.Since(began), 10*time.Second, "bounded by the timeout and the stop sequence")
	testsupport.WaitGone(t, 5*time.Second, pid)
	assert.Equal(t, plan.Failed, statuses(h)["migrate"])
	assert.NotContains(t, statuses(h), "api", "what waits on it never started")
	assert.Empty(t, h.Status().Host.Applying, "the lock is free")
}

// TestClientGoneFreesLock: an apply whose client goes away while it waits
// for a one-shot gives the lock back at once; the one-shot keeps running,
// and its completion is still recorded.
func TestClientGoneFreesLock(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	h := open(t, state)
	defer h.Shutdown(context.Background())
	src := testsupport.Source(dir, waitingSpec(dir, "true"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.Apply(ctx, ApplyRequest{Source: src, Holder: "a client that leaves"}, Report{})
		done <- err
	}()
	pid := pidIn(t, dir)
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the apply still holds the lock after its client went away")
	}
	var ended *runtime.WaitEndedError
	require.ErrorAs(t, err, &ended)
	assert.ErrorIs(t, ended.Cause, errClientGone)
	assert.Contains(t, err.Error(), "stopped waiting for migrate to be completed (its client went away); it was left running")
	assert.Empty(t, h.Status().Host.Applying)
	assert.False(t, runtimetest.Gone(pid), "the one-shot was left running")

	// The lock is free, and the one-shot's completion is recorded as it
	// comes.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o600))
	testsupport.WaitGone(t, 5*time.Second, pid)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(state, completedFile))
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	assert.Contains(t, readCompleted(t, state), "migrate")
	_, err = h.Apply(context.Background(), ApplyRequest{Source: src, Holder: "the next"}, Report{})
	require.NoError(t, err)
	assert.Equal(t, map[string]plan.Status{"migrate": plan.Completed, "api": plan.Running}, statuses(h))
}

// TestDownPreemptsApply: graft down, while an apply waits for a one-shot
// that never ends, preempts it and stops everything; the apply reports
// why it stopped waiting.
func TestDownPreemptsApply(t *testing.T) {
	dir := t.TempDir()
	h := open(t, filepath.Join(dir, ".graft"))
	defer h.Shutdown(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, waitingSpec(dir, "true")), Holder: "a deploy"}, Report{})
		done <- err
	}()
	pid := pidIn(t, dir)
	require.Eventually(t, func() bool { return h.Status().Host.Applying == "a deploy" }, 5*time.Second, time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, h.Down(ctx, ApplyRequest{Holder: "an operator"}, Report{}))
	testsupport.WaitGone(t, time.Second, pid)
	assert.Empty(t, statuses(h))
	select {
	case <-h.Ending():
	default:
		t.Fatal("the host does not end after graft down")
	}
	err := <-done
	var pre *PreemptedError
	require.ErrorAs(t, err, &pre)
	assert.Equal(t, "an operator", pre.By)
	assert.Contains(t, err.Error(), "graft down (an operator) preempted this apply")
}
