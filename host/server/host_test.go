//go:build linux

package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/host"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/plan"
)

// TestRun: a host run again after its shutdown listens, says it is ready,
// applies its kept spec again, and when its ctx ends stops every plugin
// and returns.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	h := open(t, state)
	_, err := h.Apply(context.Background(), host.ApplyRequest{Source: testsupport.Source(dir, twoSleeps)}, host.Report{})
	require.NoError(t, err)
	require.NoError(t, h.Shutdown(context.Background()))

	h = open(t, state)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	ran := make(chan error, 1)
	serve := func(ctx context.Context, ready func()) error { return Serve(ctx, h, Options{}, ready) }
	go func() { ran <- h.Run(ctx, serve, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-ran:
		t.Fatalf("Run ended before it was ready: %v", err)
	}
	var pids []int
	require.Eventually(t, func() bool {
		pids = pids[:0]
		for _, r := range h.Status().Plugins {
			if r.Status == string(plan.Running) {
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

// TestPlanEndpoint: POST /v1/plan answers the plan the host would carry
// out, under its key; a bad spec comes back as its problems.
func TestPlanEndpoint(t *testing.T) {
	dir := t.TempDir()
	h := open(t, filepath.Join(dir, ".graft"))
	defer h.Shutdown(context.Background())
	c := serve(t, h)
	ctx := context.Background()
	_, err := h.Apply(ctx, host.ApplyRequest{Source: testsupport.Source(dir, withSecret)}, host.Report{})
	require.NoError(t, err)

	p, err := planOf(t)(c.Plan(ctx, wire(dir, withSecret)))
	require.NoError(t, err)
	assert.False(t, p.HasChanges(), "the same spec under the host's key: nothing to do")
	assert.Equal(t, h.Status().Plugins[0].KeyID, p.KeyID, "the host's key")
	assert.Equal(t, h.State().Digest(), p.State)

	p, err = planOf(t)(c.Plan(ctx, wire(dir, strings.Replace(withSecret, "4711", "4712", 1))))
	require.NoError(t, err)
	require.Len(t, p.Changes, 1)
	assert.Equal(t, plan.Replace, p.Changes[0].Action)
	assert.Equal(t, []string{"env.PIN"}, p.Changes[0].Fields)

	_, err = c.Plan(ctx, wire(dir, "name: shop\nplugins:\n  db: {}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing command")
	_, err = c.Plan(ctx, hostapi.Source{})
	assert.ErrorContains(t, err, "plan: no spec")
}

// TestNamesFromRequests: a plugin name that comes in a request never
// becomes a path: names no plugins file can hold are refused, by the
// host's methods and over its API, and a file they would have named,
// outside the logs dir, is neither created nor written.
func TestNamesFromRequests(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	h := open(t, state)
	defer h.Shutdown(context.Background())
	c := serve(t, h)
	outside := filepath.Join(dir, "outside.log") // logs/../../outside.log
	require.NoError(t, os.WriteFile(outside, []byte("no newline at the end"), 0o600))
	for _, name := range []string{"../../outside", "../logs/x", "..", "", "API", "a.log", "a\x00b", strings.Repeat("a", 64)} {
		for _, follow := range []bool{false, true} {
			_, err := h.Follow(name, 10, follow)
			var nf *host.NotFoundError
			require.ErrorAs(t, err, &nf, "%q", name)
			assert.Contains(t, err.Error(), "lower-case letters, digits")
		}
		_, err := h.Leader(context.Background(), name)
		var nf *host.NotFoundError
		require.ErrorAs(t, err, &nf, "%q", name)
		if name != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = c.Logs(ctx, name, 10, true, &strings.Builder{})
			cancel()
			require.Error(t, err, "%q", name)
			if name != ".." { // which never gets past the router
				assert.Contains(t, err.Error(), "no plugin is named")
			}
		}
	}
	b, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "no newline at the end", string(b))
	_, err = os.Stat(filepath.Join(dir, "x.log"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestLogThatIsNotAFile: a named pipe or a link named like a plugin's log
// is refused at once, over the API too: nothing waits on the pipe, and the
// link's target is not read or written.
func TestLogThatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	h := open(t, state)
	defer h.Shutdown(context.Background())
	c := serve(t, h)
	fifo := filepath.Join(state, "logs", "api.log")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	target, check := testsupport.Victim(t)
	link := filepath.Join(state, "logs", "web.log")
	require.NoError(t, os.Symlink(target, link))

	start := time.Now()
	for name, path := range map[string]string{"api": fifo, "web": link} {
		for _, follow := range []bool{false, true} {
			_, err := h.Follow(name, 10, follow)
			testsupport.UnsafePath(t, err, path, "not a regular file", "rm "+path)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			var out strings.Builder
			err = c.Logs(ctx, name, 10, follow, &out)
			cancel()
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
			assert.Empty(t, out.String())
		}
	}
	assert.Less(t, time.Since(start), 5*time.Second, "nothing waited on the pipe")
	check()

	// A plugin whose log is a pipe does not start, and says why.
	_, err := h.Apply(context.Background(), host.ApplyRequest{Source: testsupport.Source(dir, "name: shop\nplugins:\n  api: {command: [sleep, '60']}\n")}, host.Report{})
	testsupport.UnsafePath(t, err, fifo, "is a named pipe", "rm "+fifo)
}

// TestKeptSpecCorrupt: a last applied spec that cannot be read does not
// keep the host from starting; its error names the file and the fix;
// status answers; down works and removes it.
func TestKeptSpecCorrupt(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	require.NoError(t, os.MkdirAll(state, 0o750))
	path := filepath.Join(state, statedir.Applied)
	require.NoError(t, os.WriteFile(path, []byte(`{"source": {"yaml": "plugins: {`), 0o600))
	h := open(t, state)
	defer h.Shutdown(context.Background())
	c := serve(t, h)
	ctx := context.Background()

	err := h.Reapply(ctx)
	var kept *host.KeptSpecError
	require.ErrorAs(t, err, &kept)
	assert.Equal(t, path, kept.Path)
	assert.Contains(t, err.Error(), "the last applied spec, "+path+", cannot be read: unexpected end of JSON input")
	assert.Contains(t, err.Error(), "graft apply replaces it (or graft down removes it)")
	assert.Contains(t, kept.Hint(), "graft down")

	st, err := c.Status(ctx)
	require.NoError(t, err, "status answers")
	assert.Empty(t, st.Plugins)
	err = c.Restart(ctx, hostapi.ApplyRequest{Restart: []string{"api"}}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot be read")

	require.NoError(t, c.Down(ctx, hostapi.ApplyRequest{Holder: "down"}, nil))
	_, err = os.Stat(path)
	assert.ErrorIs(t, err, os.ErrNotExist, "down removed it")
}

const withSecret = "name: shop\nplugins:\n  db: {command: [sleep, '60'], env: {PIN: '4711'}}\n"

// planOf reads the plan of a client's answer.
func planOf(t *testing.T) func(raw json.RawMessage, err error) (*plan.Plan, error) {
	return func(raw json.RawMessage, err error) (*plan.Plan, error) {
		t.Helper()
		if err != nil {
			return nil, err
		}
		var p plan.Plan
		require.NoError(t, json.Unmarshal(raw, &p))
		return &p, nil
	}
}
