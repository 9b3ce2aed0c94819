//go:build linux

package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
)

// TestErrorKindsOverTheWire: what the host's Go API returns by type, its
// client returns by the same types: a failed start, a held apply lock, a
// stale plan; and a forced stop is no failure, its cleanup error in the
// event, its causes found with errors.As.
func TestErrorKindsOverTheWire(t *testing.T) {
	dir := t.TempDir()
	h := open(t, filepath.Join(dir, ".graft"))
	defer h.Shutdown(context.Background())
	c := serve(t, h)
	ctx := context.Background()

	bad := "name: shop\nplugins:\n  db: {command: [sh, -c, 'echo cannot start; exit 3'], ready: {exec: [sleep, '10'], timeout: 5 seconds}}\n  api: {command: [sleep, '60'], uses: [db]}\n"
	err := c.Apply(ctx, hostapi.ApplyRequest{Source: wire(dir, bad)}, nil)
	var applyErr *hostapi.ApplyError
	require.ErrorAs(t, err, &applyErr)
	var start *runtime.StartError
	require.ErrorAs(t, err, &start)
	assert.Equal(t, "db", start.Plugin)
	assert.Equal(t, 3, start.Exit.Code)
	assert.Equal(t, []string{"cannot start"}, start.Exit.Tail)
	var step *hostapi.StepError
	require.ErrorAs(t, err, &step)
	assert.Equal(t, "start:db", step.Step.ID)
	assert.Contains(t, err.Error(), "start db: exited before it was ready (exit status 3)")

	// A stop that has to force its plugin succeeds, and says so.
	stubborn := "name: shop\nplugins:\n  db: {command: [sh, -c, 'trap \"\" TERM; echo up; exec sleep 60']}\n  api: {command: [sleep, '60'], uses: [db]}\n"
	require.NoError(t, c.Apply(ctx, hostapi.ApplyRequest{Source: wire(dir, stubborn)}, nil))
	var stops []hostapi.Event
	err = c.Restart(ctx, hostapi.ApplyRequest{Restart: []string{"db"}}, func(m hostapi.Message) {
		if m.Type == hostapi.MsgEvent && m.Event.Step.ID == "stop:db" && m.Event.Phase != hostapi.Began {
			stops = append(stops, *m.Event)
		}
	})
	require.NoError(t, err, "a forced stop is a completed stop")
	require.Len(t, stops, 1)
	assert.Equal(t, hostapi.Succeeded, stops[0].Phase)
	assert.Equal(t, string(runtime.Killed), stops[0].Result.Outcome)
	require.NotNil(t, stops[0].Result.Cleanup)
	var cleanup *runtime.CleanupError
	require.ErrorAs(t, stops[0].Result.Cleanup.Err(), &cleanup, "its type back")
	var ltt *runtime.LocalTerminationTimeout
	require.ErrorAs(t, cleanup, &ltt)
	assert.Equal(t, "db", ltt.Plugin)
	assert.Equal(t, 100*time.Millisecond, ltt.Window)
	st, err := c.Status(ctx)
	require.NoError(t, err)
	for _, r := range st.Plugins {
		assert.Equal(t, string(plan.Running), r.Status, "%s came back", r.Name)
		if r.Name == "db" {
			require.NotNil(t, r.LastStop)
			assert.Equal(t, "Killed", r.LastStop.Outcome)
			require.Len(t, r.LastStop.Causes, 1)
			assert.Equal(t, "LocalTerminationTimeout", r.LastStop.Causes[0].Kind)
			assert.GreaterOrEqual(t, r.LastStop.TookMillis, int64(100), "it waited the exit window, at least")
			assert.Less(t, r.LastStop.TookMillis, int64(30000))
		}
	}

	// A stale plan.
	src := wire(dir, twoSleeps)
	raw, err := c.Plan(ctx, src)
	require.NoError(t, err)
	var saved plan.Plan
	require.NoError(t, json.Unmarshal(raw, &saved))
	saved.State = (&plan.State{}).Digest() // made when nothing ran
	raw, err = json.Marshal(saved)
	require.NoError(t, err)
	err = c.Apply(ctx, hostapi.ApplyRequest{Source: src, Plan: raw}, nil)
	var stale *hostapi.StaleError
	require.ErrorAs(t, err, &stale)
	assert.Equal(t, "the running state changed since the plan was made", stale.Reason)

	// A held apply lock.
	slow := "name: shop\nplugins:\n  slow:\n    command: [sleep, '60']\n    ready: {exec: [sleep, '0.5'], timeout: 10 seconds}\n"
	var wg sync.WaitGroup
	wg.Go(func() {
		assert.NoError(t, c.Apply(ctx, hostapi.ApplyRequest{Source: wire(dir, slow), Holder: "the first"}, nil))
	})
	require.Eventually(t, func() bool { return h.Status().Host.Applying == "the first" }, 5*time.Second, time.Millisecond)
	err = c.Apply(ctx, hostapi.ApplyRequest{Source: wire(dir, slow), Holder: "the second"}, nil)
	var locked *hostapi.LockedError
	require.ErrorAs(t, err, &locked)
	assert.Equal(t, "the first", locked.Holder)
	assert.WithinDuration(t, time.Now(), locked.Since, 10*time.Second)
	wg.Wait()
}
