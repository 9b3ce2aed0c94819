//go:build linux

package host

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/apply"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/dirlock"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

func TestMain(m *testing.M) {
	testsupport.PlayRole(roleEnv, runRole) // the test binary run again, as a host's log
	runtimetest.Main(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func open(t *testing.T, dir string) *Host {
	t.Helper()
	h, err := Open(dir, Options{Logger: quiet, Timing: runtime.Timing{ShutdownTimeout: time.Second, ExitWindow: 100 * time.Millisecond, KillAfter: 100 * time.Millisecond}})
	require.NoError(t, err)
	return h
}

const twoSleeps = "name: shop\nplugins:\n  db: {command: [sleep, '60']}\n  api: {command: [sleep, '60'], uses: [db]}\n"

func statuses(h *Host) map[string]plan.Status {
	out := map[string]plan.Status{}
	for _, r := range h.State().Plugins {
		out[r.Name] = r.Status
	}
	return out
}

func TestApplyAndShutdown(t *testing.T) {
	dir := t.TempDir()
	h := open(t, filepath.Join(dir, ".graft"))
	var plans, events int
	report := Report{Plan: func(*plan.Plan) { plans++ }, Event: func(e apply.Event) {
		assert.Equal(t, 1, plans, "the plan comes first")
		events++
	}}
	p, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, twoSleeps), Holder: "test"}, report)
	require.NoError(t, err)
	assert.Equal(t, 2, p.Summary.Start)
	assert.Equal(t, 1, plans)
	assert.Equal(t, 4, events, "each step's beginning and end")
	assert.Equal(t, map[string]plan.Status{"db": plan.Running, "api": plan.Running}, statuses(h))

	st := h.Status()
	assert.Equal(t, "graft.status/v1", st.Format)
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
	_, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, twoSleeps)}, Report{})
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
		_, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, slow), Holder: "the first"}, Report{})
		assert.NoError(t, err)
	}()
	require.Eventually(t, func() bool { return h.Status().Host.Applying == "the first" }, 5*time.Second, time.Millisecond)

	_, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, slow), Holder: "the second"}, Report{})
	var locked *hostapi.LockedError
	require.ErrorAs(t, err, &locked)
	assert.Equal(t, "the first", locked.Holder)
	assert.True(t, strings.HasPrefix(err.Error(), "another apply is under way: the first, since "))

	p, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, slow), Holder: "the third", LockWait: 10 * time.Second}, Report{})
	require.NoError(t, err, "it waited")
	assert.False(t, p.HasChanges(), "and found the first apply's work done")
	wg.Wait()
}

func TestStalePlan(t *testing.T) {
	dir := t.TempDir()
	h := open(t, filepath.Join(dir, ".graft"))
	defer h.Shutdown(context.Background())
	src := testsupport.Source(dir, twoSleeps)
	saved, err := h.Plan(src)
	require.NoError(t, err)

	_, err = h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, "plugins:\n  x: {command: [sleep, '60']}\n")}, Report{})
	require.NoError(t, err)
	_, err = h.Apply(context.Background(), ApplyRequest{Source: src, Plan: saved}, Report{})
	var stale *hostapi.StaleError
	require.ErrorAs(t, err, &stale)
	assert.Equal(t, "stale plan: the running state changed since the plan was made", err.Error())

	saved.Desired = "sha256:other"
	saved.State = h.State().Digest()
	_, err = h.Apply(context.Background(), ApplyRequest{Source: src, Plan: saved}, Report{})
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
	_, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, bad)}, Report{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "start db: exited before it was ready (exit status 3); last output:\n  cannot start")
	assert.Equal(t, map[string]plan.Status{"db": plan.Failed}, statuses(h), "api was skipped")

	p, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, twoSleeps)}, Report{})
	require.NoError(t, err)
	assert.Equal(t, 2, p.Summary.Start)
	assert.Equal(t, map[string]plan.Status{"db": plan.Running, "api": plan.Running}, statuses(h))
}

// TestParsedOnce: an apply parses its spec once; a status, a restart of
// the applied spec and the start-up's apply of the kept one parse none.
func TestParsedOnce(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	h := open(t, state)
	before := spec.Parses()
	_, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, twoSleeps)}, Report{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), spec.Parses()-before, "an apply parses its spec once")

	before = spec.Parses()
	for range 100 {
		assert.Equal(t, "shop", h.Status().Host.Project)
	}
	require.NoError(t, h.Restart(context.Background(), ApplyRequest{Restart: []string{"db"}}, Report{}))
	assert.Zero(t, spec.Parses()-before, "a status or a restart parses nothing")
	require.NoError(t, h.Shutdown(context.Background()))

	h = open(t, state)
	before = spec.Parses()
	require.NoError(t, h.Reapply(context.Background()))
	assert.Zero(t, spec.Parses()-before, "the kept spec was parsed as the host read it, once")
	assert.Equal(t, map[string]plan.Status{"db": plan.Running, "api": plan.Running}, statuses(h))
	require.NoError(t, h.Shutdown(context.Background()))
}
