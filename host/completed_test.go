//go:build linux

package host

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
)

// migrateSpec is a one-shot migrate that appends a line to ran (with
// arg in it) and a long-running api that waits for it to complete.
func migrateSpec(ran, arg string) string {
	return "name: shop\nplugins:\n" +
		"  migrate: {command: [sh, -c, 'echo " + arg + " >> " + ran + "'], once: true}\n" +
		"  api: {command: [sleep, '60'], uses: [{plugin: migrate, until: completed}]}\n"
}

// runs counts the lines migrate appended to ran.
func runs(t *testing.T, ran string) int {
	t.Helper()
	b, err := os.ReadFile(ran)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

func pluginStatus(h *Host, name string) *hostapi.PluginStatus {
	for _, r := range h.Status().Plugins {
		if r.Name == name {
			return &r
		}
	}
	return nil
}

// readCompleted reads completed.json's plugins, failing on anything else
// than the file, mode 0600, holding JSON.
func readCompleted(t *testing.T, state string) map[string]completedRecord {
	t.Helper()
	path := filepath.Join(state, completedFile)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc completedDoc
	require.NoError(t, json.Unmarshal(b, &doc))
	return doc.Plugins
}

// TestCompletedSurvivesRestart: a one-shot that completed is recorded in
// the state dir; the host started again lists it as completed, with the
// same instance, before and after bringing back its spec, and does not run
// it again; a changed entry runs again.
func TestCompletedSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	state, ran := filepath.Join(dir, ".graft"), filepath.Join(dir, "ran.txt")
	h := open(t, state)
	_, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, migrateSpec(ran, "v1"))}, Report{})
	require.NoError(t, err)
	assert.Equal(t, map[string]plan.Status{"migrate": plan.Completed, "api": plan.Running}, statuses(h))
	before := pluginStatus(h, "migrate")
	rec := readCompleted(t, state)
	require.Contains(t, rec, "migrate")
	assert.NotContains(t, rec, "api")
	assert.Equal(t, before.Hash, rec["migrate"].Hash)
	assert.Equal(t, before.KeyID, rec["migrate"].KeyID)
	require.NoError(t, h.Shutdown(context.Background()))
	assert.Contains(t, readCompleted(t, state), "migrate", "the host's shutdown is no reason to forget it")

	h = open(t, state)
	defer func() { h.Shutdown(context.Background()) }()
	assert.Equal(t, map[string]plan.Status{"migrate": plan.Completed}, statuses(h), "known before the start-up's apply")
	require.NoError(t, h.Reapply(context.Background()))
	assert.Equal(t, map[string]plan.Status{"migrate": plan.Completed, "api": plan.Running}, statuses(h))
	after := pluginStatus(h, "migrate")
	assert.Equal(t, before.Instance, after.Instance)
	assert.Equal(t, before.Generation, after.Generation)
	assert.True(t, before.Since.Equal(after.Since), "since %v, then %v", before.Since, after.Since)
	assert.Zero(t, after.PID)
	assert.Equal(t, 1, runs(t, ran), "not run again by the start-up's apply")

	p, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, migrateSpec(ran, "v1"))}, Report{})
	require.NoError(t, err)
	assert.Equal(t, plan.Summary{Keep: 2}, p.Summary)
	assert.Equal(t, 1, runs(t, ran))

	p, err = h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, migrateSpec(ran, "v2"))}, Report{})
	require.NoError(t, err)
	assert.Equal(t, 1, p.Summary.Replace, "a changed entry runs again")
	assert.Equal(t, 2, runs(t, ran))
	assert.Equal(t, pluginStatus(h, "migrate").Hash, readCompleted(t, state)["migrate"].Hash, "recorded under its new entry")
}

// lockedBuffer is a log that goroutines write while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCompletedUnreadable: a record of completed one-shots that cannot be
// read (not JSON, or a link where the file goes) does not keep the host
// from starting: it says so in its log, and the one-shot runs again;
// the next record replaces the file.
func TestCompletedUnreadable(t *testing.T) {
	for name, spoil := range map[string]func(path string) error{
		"garbage": func(path string) error { return os.WriteFile(path, []byte("{\"plugins\": {\"migrate\": "), 0o600) },
		"a link": func(path string) error {
			if err := os.Rename(path, path+".real"); err != nil {
				return err
			}
			return os.Symlink(path+".real", path)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			state, ran := filepath.Join(dir, ".graft"), filepath.Join(dir, "ran.txt")
			h := open(t, state)
			_, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, migrateSpec(ran, "v1"))}, Report{})
			require.NoError(t, err)
			require.NoError(t, h.Shutdown(context.Background()))
			require.NoError(t, spoil(filepath.Join(state, completedFile)))

			var log lockedBuffer
			h, err = Open(state, Options{Logger: slog.New(slog.NewTextHandler(&log, nil)), Timing: runtime.Timing{ShutdownTimeout: time.Second, ExitWindow: 100 * time.Millisecond, KillAfter: 100 * time.Millisecond}})
			require.NoError(t, err)
			defer func() { h.Shutdown(context.Background()) }()
			assert.Contains(t, log.String(), "the record of completed one-shots cannot be read; they run again")
			assert.Contains(t, log.String(), completedFile)
			assert.Empty(t, statuses(h))
			require.NoError(t, h.Reapply(context.Background()))
			assert.Equal(t, map[string]plan.Status{"migrate": plan.Completed, "api": plan.Running}, statuses(h))
			assert.Equal(t, 2, runs(t, ran), "run again")
			fi, err := os.Lstat(filepath.Join(state, completedFile))
			require.NoError(t, err)
			assert.True(t, fi.Mode().IsRegular(), "replaced by a file of the host's")
			assert.Contains(t, readCompleted(t, state), "migrate")
		})
	}
}

// TestCompletedForgotten: the record of a completed one-shot goes when
// it runs again (from its start: a host that dies meanwhile runs it
// again), fails, or leaves the spec; graft down removes the file.
func TestCompletedForgotten(t *testing.T) {
	dir := t.TempDir()
	state, ran := filepath.Join(dir, ".graft"), filepath.Join(dir, "ran.txt")
	gate := filepath.Join(dir, "gate")
	// migrate appends to ran, then waits while gate is missing.
	gated := "name: shop\nplugins:\n  migrate: {command: [sh, -c, 'echo x >> " + ran + "; while [ ! -e " + gate + " ]; do sleep 0.05; done'], once: true}\n"
	failing := "name: shop\nplugins:\n  migrate: {command: [sh, -c, 'exit 3'], once: true}\n"
	other := "name: shop\nplugins:\n  api: {command: [sleep, '60']}\n"
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	h := open(t, state)
	defer func() { h.Shutdown(context.Background()) }()
	apply := func(yaml string) error {
		_, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, yaml)}, Report{})
		return err
	}
	require.NoError(t, apply(gated))
	require.Contains(t, readCompleted(t, state), "migrate")

	// graft run: forgotten as it starts again, recorded again once it
	// completes.
	require.NoError(t, os.Remove(gate))
	ran2 := make(chan error, 1)
	go func() {
		ran2 <- h.Restart(context.Background(), ApplyRequest{Restart: []string{"migrate"}, Once: true}, Report{})
	}()
	require.Eventually(t, func() bool { return runs(t, ran) == 2 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, plan.Running, statuses(h)["migrate"])
	assert.NotContains(t, readCompleted(t, state), "migrate", "forgotten while it runs again")
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	require.NoError(t, <-ran2)
	assert.Equal(t, plan.Completed, statuses(h)["migrate"])
	assert.Contains(t, readCompleted(t, state), "migrate", "recorded again")

	require.Error(t, apply(failing))
	assert.Equal(t, plan.Failed, statuses(h)["migrate"])
	assert.NotContains(t, readCompleted(t, state), "migrate", "forgotten when it fails")

	require.NoError(t, apply(gated))
	require.Contains(t, readCompleted(t, state), "migrate")
	require.NoError(t, apply(other))
	assert.Empty(t, readCompleted(t, state), "forgotten when it leaves the spec")

	require.NoError(t, apply(gated))
	require.Contains(t, readCompleted(t, state), "migrate")
	require.NoError(t, h.Down(context.Background(), ApplyRequest{Holder: "test"}, Report{}))
	assert.NoFileExists(t, filepath.Join(state, completedFile), "graft down forgets everything")
}

// TestCompletedOtherEntry: a record whose entry is not the last applied
// one (its hash, or its digest key, differs) is not brought back: the
// one-shot runs again, as a changed entry does.
func TestCompletedOtherEntry(t *testing.T) {
	for _, field := range []string{"hash", "keyID"} {
		t.Run(field, func(t *testing.T) {
			dir := t.TempDir()
			state, ran := filepath.Join(dir, ".graft"), filepath.Join(dir, "ran.txt")
			h := open(t, state)
			_, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, migrateSpec(ran, "v1"))}, Report{})
			require.NoError(t, err)
			require.NoError(t, h.Shutdown(context.Background()))
			recs := readCompleted(t, state)
			r := recs["migrate"]
			if field == "hash" {
				r.Hash = "sha256:0000"
			} else {
				r.KeyID = "another"
			}
			recs["migrate"] = r
			require.NoError(t, os.WriteFile(filepath.Join(state, completedFile), encodeCompleted(recs), 0o600))

			h = open(t, state)
			defer func() { h.Shutdown(context.Background()) }()
			assert.Empty(t, statuses(h))
			require.NoError(t, h.Reapply(context.Background()))
			assert.Equal(t, 2, runs(t, ran), "run again")
			assert.Equal(t, pluginStatus(h, "migrate").Hash, readCompleted(t, state)["migrate"].Hash)
		})
	}
}
