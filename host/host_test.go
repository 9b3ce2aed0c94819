//go:build linux

package host

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/dirlock"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		runRole(role) // the test binary run again, as a host or a host's log
		return
	}
	runtimetest.Main(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func open(t *testing.T, dir string) *Host {
	t.Helper()
	h, err := Open(dir, Options{Logger: quiet, Timing: runtime.Timing{ShutdownTimeout: time.Second, ExitWindow: 100 * time.Millisecond, KillAfter: 100 * time.Millisecond}})
	require.NoError(t, err)
	return h
}

func source(t *testing.T, dir, yaml string) plan.Source {
	t.Helper()
	return plan.Source{File: filepath.Join(dir, "plugins.yaml"), Dir: dir, YAML: yaml}
}

const twoSleeps = "name: shop\nplugins:\n  db: {command: [sleep, '60']}\n  api: {command: [sleep, '60'], uses: [db]}\n"

func statuses(h *Host) map[string]plan.Status {
	out := map[string]plan.Status{}
	for _, r := range h.Status().Plugins {
		out[r.Name] = r.Status
	}
	return out
}

func TestApplyAndShutdown(t *testing.T) {
	dir := t.TempDir()
	h := open(t, filepath.Join(dir, ".graft"))
	var events []hostapi.Message
	p, err := h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, twoSleeps), Holder: "test"}, func(m hostapi.Message) { events = append(events, m) })
	require.NoError(t, err)
	assert.Equal(t, 2, p.Summary.Start)
	assert.Equal(t, hostapi.MsgPlan, events[0].Type)
	assert.Len(t, events, 1+4, "the plan, then each step's beginning and end")
	assert.Equal(t, map[string]plan.Status{"db": plan.Running, "api": plan.Running}, statuses(h))

	st := h.Status()
	assert.Equal(t, os.Getpid(), st.Host.PID)
	assert.Equal(t, "shop", st.Host.Project)
	for _, r := range st.Plugins {
		assert.NotZero(t, r.PID)
		assert.Len(t, r.Instance, 36)
		assert.Equal(t, int64(1), r.Generation)
	}
	require.NoError(t, h.Shutdown(context.Background()))
}

// TestReapply: a host keeps the applied spec across its own shutdown and
// brings the plugins back when it starts again.
func TestReapply(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	h := open(t, state)
	_, err := h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, twoSleeps)}, nil)
	require.NoError(t, err)
	require.NoError(t, h.Shutdown(context.Background()))

	h = open(t, state)
	assert.Empty(t, statuses(h))
	require.NoError(t, h.Reapply(context.Background()))
	assert.Equal(t, map[string]plan.Status{"db": plan.Running, "api": plan.Running}, statuses(h))
	require.NoError(t, h.Shutdown(context.Background()))
}

func TestSecondHostRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".graft")
	h := open(t, dir)
	defer h.Shutdown(context.Background())
	_, err := Open(dir, Options{Logger: quiet})
	var held *dirlock.HeldError
	require.ErrorAs(t, err, &held)
	assert.Equal(t, os.Getpid(), held.PID)
	assert.Equal(t, dir, held.Dir)
	assert.Equal(t, "host", held.Holder)
	assert.Contains(t, err.Error(), "another host (pid ")
	assert.Equal(t, "graft status --state-dir "+dir+" (to see it), or graft down (to stop it)", held.Hint())
}

// TestApplyLock: one apply at a time; a second fails at once, or waits.
func TestApplyLock(t *testing.T) {
	dir := t.TempDir()
	h := open(t, filepath.Join(dir, ".graft"))
	defer h.Shutdown(context.Background())
	slow := "name: shop\nplugins:\n  slow:\n    command: [sleep, '60']\n    ready: {exec: [sleep, '0.5'], timeout: 10 seconds}\n"
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, slow), Holder: "the first"}, nil)
		assert.NoError(t, err)
	}()
	require.Eventually(t, func() bool { return h.Status().Host.Applying == "the first" }, 5*time.Second, time.Millisecond)

	_, err := h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, slow), Holder: "the second"}, nil)
	var locked *hostapi.LockedError
	require.ErrorAs(t, err, &locked)
	assert.Equal(t, "the first", locked.Holder)
	assert.True(t, strings.HasPrefix(err.Error(), "another apply is under way: the first, since "))

	p, err := h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, slow), Holder: "the third", LockWait: 10_000}, nil)
	require.NoError(t, err, "it waited")
	assert.False(t, p.HasChanges(), "and found the first apply's work done")
	wg.Wait()
}

func TestStalePlan(t *testing.T) {
	dir := t.TempDir()
	h := open(t, filepath.Join(dir, ".graft"))
	defer h.Shutdown(context.Background())
	src := source(t, dir, twoSleeps)
	saved, err := h.Plan(src)
	require.NoError(t, err)

	_, err = h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, "plugins:\n  x: {command: [sleep, '60']}\n")}, nil)
	require.NoError(t, err)
	_, err = h.Apply(context.Background(), hostapi.ApplyRequest{Source: src, Plan: saved}, nil)
	var stale *hostapi.StaleError
	require.ErrorAs(t, err, &stale)
	assert.Equal(t, "stale plan: the running state changed since the plan was made", err.Error())

	saved.Desired = "sha256:other"
	saved.State = h.Status().State().Digest()
	_, err = h.Apply(context.Background(), hostapi.ApplyRequest{Source: src, Plan: saved}, nil)
	assert.ErrorAs(t, err, &stale)

	// Refused applies carried nothing out: the metrics say so.
	assert.Equal(t, 2.0, testutil.ToFloat64(h.metrics.applies.WithLabelValues(applyRefused)))
	assert.Equal(t, 1.0, testutil.ToFloat64(h.metrics.applies.WithLabelValues(applySucceeded)))
}

// TestFailedStartConverges: a plugin that fails to start is failed, the
// steps that wait on it are skipped, and the next apply starts it again.
func TestFailedStartConverges(t *testing.T) {
	dir := t.TempDir()
	h := open(t, filepath.Join(dir, ".graft"))
	defer h.Shutdown(context.Background())
	bad := "name: shop\nplugins:\n  db: {command: [sh, -c, 'echo cannot start; exit 3'], ready: {exec: [sleep, '10'], timeout: 5 seconds}}\n  api: {command: [sleep, '60'], uses: [db]}\n"
	_, err := h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, bad)}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "start db: exited before it was ready (exit status 3); last output:\n  cannot start")
	assert.Equal(t, map[string]plan.Status{"db": plan.Failed}, statuses(h), "api was skipped")

	p, err := h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, twoSleeps)}, nil)
	require.NoError(t, err)
	assert.Equal(t, 2, p.Summary.Start)
	assert.Equal(t, map[string]plan.Status{"db": plan.Running, "api": plan.Running}, statuses(h))
}

// TestLongStateDir: a state dir too deep for a unix socket's path gets a
// socket in the user's own socket directory, mode 0700, which clients
// find.
func TestLongStateDir(t *testing.T) {
	dir := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", tmp)
	deep := filepath.Join(dir, strings.Repeat("d", 60), strings.Repeat("e", 60), ".graft")
	h := open(t, deep)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	ready := make(chan struct{})
	go func() { served <- h.Serve(ctx, func() { close(ready) }) }()
	<-ready
	path, err := hostapi.SocketPath(deep)
	require.NoError(t, err)
	assert.NotEqual(t, filepath.Join(deep, "host.sock"), path)
	assert.LessOrEqual(t, len(path), 103, "sun_path holds 108 bytes on Linux, 104 on the BSDs")
	own := filepath.Join(tmp, "graft-"+strconv.Itoa(os.Getuid()))
	assert.Equal(t, own, filepath.Dir(path))
	fi, err := os.Lstat(own)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	c, err := hostapi.NewClient(deep)
	require.NoError(t, err)
	st, err := c.Status(context.Background())
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), st.Host.PID)
	c.Close()
	cancel()
	require.NoError(t, <-served)
	require.NoError(t, h.Shutdown(context.Background()))
	_, err = os.Stat(path)
	assert.True(t, errors.Is(err, os.ErrNotExist), "the socket is removed")
	c, err = hostapi.NewClient(deep)
	require.NoError(t, err)
	_, err = c.Status(context.Background())
	assert.ErrorIs(t, err, hostapi.ErrNoHost)
}

// TestParsedOnce: an apply parses its spec once; a status, a restart of
// the applied spec and the start-up's apply of the kept one parse none.
func TestParsedOnce(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	h := open(t, state)
	before := spec.Parses()
	_, err := h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, twoSleeps)}, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(1), spec.Parses()-before, "an apply parses its spec once")

	before = spec.Parses()
	for range 100 {
		assert.Equal(t, "shop", h.Status().Host.Project)
	}
	require.NoError(t, h.Restart(context.Background(), hostapi.ApplyRequest{Restart: []string{"db"}}, nil))
	assert.Zero(t, spec.Parses()-before, "a status or a restart parses nothing")
	require.NoError(t, h.Shutdown(context.Background()))

	h = open(t, state)
	before = spec.Parses()
	require.NoError(t, h.Reapply(context.Background()))
	assert.Zero(t, spec.Parses()-before, "the kept spec was parsed as the host read it, once")
	assert.Equal(t, map[string]plan.Status{"db": plan.Running, "api": plan.Running}, statuses(h))
	require.NoError(t, h.Shutdown(context.Background()))
}

// TestRun: a host run again after its shutdown listens, says it is ready,
// applies its kept spec again, and when its ctx ends stops every plugin
// and returns.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	h := open(t, state)
	_, err := h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, twoSleeps)}, nil)
	require.NoError(t, err)
	require.NoError(t, h.Shutdown(context.Background()))

	h = open(t, state)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	ran := make(chan error, 1)
	go func() { ran <- h.Run(ctx, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-ran:
		t.Fatalf("Run ended before it was ready: %v", err)
	}
	var pids []int
	require.Eventually(t, func() bool {
		pids = pids[:0]
		for _, r := range h.Status().Plugins {
			if r.Status == plan.Running {
				pids = append(pids, r.PID)
			}
		}
		return len(pids) == 2
	}, 10*time.Second, 10*time.Millisecond, "the kept spec runs again")
	cancel()
	require.NoError(t, <-ran)
	for _, pid := range pids {
		assert.Error(t, syscall.Kill(pid, 0), "pid %d is gone", pid)
	}
}
