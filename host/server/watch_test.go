//go:build linux

package server

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/host"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/plan"
)

// TestWatchStatus: a watch of the status gets the status at once, then
// a new one as an apply starts plugins, and as a plugin exits on its own
// (its supervisor's change, no apply involved); graft down ends it.
func TestWatchStatus(t *testing.T) {
	dir := t.TempDir()
	h := open(t, filepath.Join(dir, ".graft"))
	t.Cleanup(func() { h.Shutdown(context.Background()) })
	c := serve(t, h)

	got := make(chan *hostapi.Status, 100)
	ended := make(chan error, 1)
	go func() {
		ended <- c.WatchStatus(context.Background(), func(st *hostapi.Status) error { got <- st; return nil })
	}()
	until := func(what string, cond func(map[string]plan.Status) bool) *hostapi.Status {
		t.Helper()
		timeout := time.After(15 * time.Second)
		for {
			select {
			case st := <-got:
				if cond(statuses(st)) {
					return st
				}
			case err := <-ended:
				t.Fatalf("the watch ended (%v) before %s", err, what)
			case <-timeout:
				t.Fatalf("no status with %s", what)
			}
		}
	}
	until("no plugins", func(s map[string]plan.Status) bool { return len(s) == 0 })

	_, err := h.Apply(context.Background(), host.ApplyRequest{Source: testsupport.Source(dir, twoSleeps), Holder: "test"}, host.Report{})
	require.NoError(t, err)
	st := until("both running", func(s map[string]plan.Status) bool { return s["db"] == plan.Running && s["api"] == plan.Running })
	var db int
	for _, r := range st.Plugins {
		if r.Name == "db" {
			db = r.PID
		}
	}
	require.NotZero(t, db)
	require.NoError(t, syscall.Kill(db, syscall.SIGKILL))
	st = until("db failed", func(s map[string]plan.Status) bool { return s["db"] == plan.Failed })
	assert.Contains(t, st.Plugins[1].LastError+st.Plugins[0].LastError, "exited on its own")

	require.NoError(t, c.Down(context.Background(), hostapi.ApplyRequest{Holder: "test"}, nil))
	select {
	case err := <-ended:
		assert.ErrorIs(t, err, hostapi.ErrWatchEnded)
	case <-time.After(10 * time.Second):
		t.Fatal("graft down does not end the watch")
	}
}
