//go:build linux

package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/planner"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

const withSecret = "name: shop\nplugins:\n  db: {command: [sleep, '60'], env: {PIN: '4711'}}\n"

// TestDigestKeyKept: the host makes its digest key at random the first
// time, mode 0600, and keeps it: a host started again on the state dir
// keys its digests alike, and its records name the key.
func TestDigestKeyKept(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".graft")
	h := open(t, state)
	fi, err := os.Stat(filepath.Join(state, statedir.DigestKey))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	k, err := planner.ReadKey(state)
	require.NoError(t, err)
	_, err = h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, withSecret)}, Report{})
	require.NoError(t, err)
	before := h.Status().Plugins[0]
	assert.Equal(t, k.ID(), before.KeyID)
	require.NoError(t, h.Shutdown(context.Background()))

	h = open(t, state)
	defer h.Shutdown(context.Background())
	require.NoError(t, h.Reapply(context.Background()))
	after := h.Status().Plugins[0]
	assert.Equal(t, before.Hash, after.Hash, "the same key, the same hash")
	assert.Equal(t, before.Fields, after.Fields)

	other, err := Open(filepath.Join(t.TempDir(), ".graft"), Options{Logger: quiet})
	require.NoError(t, err)
	defer other.Shutdown(context.Background())
	p, err := other.Plan(testsupport.Source(dir, withSecret))
	require.NoError(t, err)
	assert.NotEqual(t, after.Hash, p.Changes[0].Hash, "another state dir, another key")
	assert.NotEqual(t, k.ID(), p.KeyID)
}

// TestDigestKeyReadableRefused: a key file others may read is refused,
// naming it, with a hint.
func TestDigestKeyReadableRefused(t *testing.T) {
	state := filepath.Join(t.TempDir(), ".graft")
	h := open(t, state)
	require.NoError(t, h.Shutdown(context.Background()))
	path := filepath.Join(state, statedir.DigestKey)
	require.NoError(t, os.Chmod(path, 0o644))
	_, err := Open(state, Options{Logger: quiet})
	var bad *planner.KeyError
	require.ErrorAs(t, err, &bad)
	assert.Equal(t, "digest key "+path+": mode 0644 lets others read it", err.Error())
	assert.Contains(t, bad.Hint(), "chmod 600 "+path)

	require.NoError(t, os.Remove(path))
	require.NoError(t, os.WriteFile(path, []byte("not a key\n"), 0o600))
	_, err = planner.ReadKey(state)
	require.ErrorAs(t, err, &bad)
	assert.Contains(t, err.Error(), "a digest key is 64 hex digits")
}

// TestSavedPlanKeys: a saved plan is checked under the key it was made
// with: the host's, or the one-time key of a plan made without a host;
// under any other it is stale.
func TestSavedPlanKeys(t *testing.T) {
	dir := t.TempDir()
	h := open(t, filepath.Join(dir, ".graft"))
	defer h.Shutdown(context.Background())
	ctx := context.Background()
	src := testsupport.Source(dir, withSecret)
	desired, err := src.Spec()
	require.NoError(t, err)

	// Made elsewhere, under a key the host never saw: stale, saying so.
	foreign, err := plan.Diff(desired.WithKey(spec.NewDigestKey()), &plan.State{})
	require.NoError(t, err)
	_, err = h.Apply(ctx, ApplyRequest{Source: src, Plan: foreign}, Report{})
	var stale *hostapi.StaleError
	require.ErrorAs(t, err, &stale)
	assert.Contains(t, stale.Reason, "it was made with digest key "+foreign.KeyID+", not this host's")

	// Made without a host: its one-time key comes with its source.
	oneTime := spec.NewDigestKey()
	saved, err := plan.Diff(desired.WithKey(oneTime), &plan.State{})
	require.NoError(t, err)
	withKey := src
	withKey.DigestKey = oneTime.Hex()
	wrong := src
	wrong.DigestKey = spec.NewDigestKey().Hex()
	_, err = h.Apply(ctx, ApplyRequest{Source: wrong, Plan: saved}, Report{})
	require.ErrorAs(t, err, &stale)
	assert.Contains(t, stale.Reason, "the plan file was changed")
	edited := withKey
	edited.YAML = strings.Replace(withSecret, "4711", "4712", 1)
	_, err = h.Apply(ctx, ApplyRequest{Source: edited, Plan: saved}, Report{})
	require.ErrorAs(t, err, &stale)
	assert.Equal(t, "the plan's spec is not the one it was made from", stale.Reason)

	_, err = h.Apply(ctx, ApplyRequest{Source: withKey, Plan: saved}, Report{})
	require.NoError(t, err)
	r := h.Status().Plugins[0]
	k, err := planner.ReadKey(filepath.Join(dir, ".graft"))
	require.NoError(t, err)
	assert.Equal(t, k.ID(), r.KeyID, "what runs is recorded under the host's key")
	b, err := os.ReadFile(filepath.Join(dir, ".graft", appliedFile))
	require.NoError(t, err)
	assert.NotContains(t, string(b), oneTime.Hex(), "the one-time key is not kept")

	// Made by the host: checked under its key.
	again, err := h.Plan(src)
	require.NoError(t, err)
	_, err = h.Apply(ctx, ApplyRequest{Source: src, Plan: again}, Report{})
	require.NoError(t, err)
}
