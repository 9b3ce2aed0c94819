package hostapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// fullStatus sets every field of a Status, and leaves a second plugin with
// only its name, run and status.
func fullStatus() *Status {
	at := func(sec int) time.Time { return time.Date(2026, 1, 2, 3, 4, sec, 0, time.UTC) }
	return &Status{
		Format: StatusFormat,
		Host:   &HostInfo{PID: 1, Version: "v1", Project: "shop", StateDir: "/s", Since: at(5), Spec: "sha256:ss", Applying: "me"},
		Plugins: []PluginStatus{{
			Name: "api", Run: "runner", Status: "unconfirmed", LastError: "boom <&>", Hash: "sha256:bb",
			Uses: []string{"cache", "db"}, Fields: map[string]string{"command": "x", "env.A": "y"}, KeyID: "k", Runner: "r1",
			Instance: "u2", Generation: 3, PID: 11, Since: at(6), Restarts: 2, Role: "leader", Address: "127.0.0.1:1",
			LastStop: &LastStop{Outcome: "Killed", Causes: []StopCause{{Kind: "LocalTerminationTimeout", Message: "m"}, {Message: "n"}}, At: at(7), TookMillis: 1500},
		}, {
			Name: "db", Run: "local", Status: "running",
		}},
	}
}

// TestStatusJSON: a Status is written exactly as graft status --json wrote
// it when plan.State was the host's report too (testdata/status.json was
// made by that code), field order included, and reads back whole.
func TestStatusJSON(t *testing.T) {
	st := fullStatus()
	got, err := json.MarshalIndent(st, "", "  ")
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join("testdata", "status.json"))
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got)+"\n")

	var back Status
	require.NoError(t, json.Unmarshal(got, &back))
	assert.Equal(t, st, &back)

	empty, err := json.Marshal(&Status{Plugins: []PluginStatus{}})
	require.NoError(t, err)
	assert.Equal(t, `{"plugins":[]}`, string(empty))
}

// TestStatusHasEveryRecordField: a plugin's status names every field of
// plan.Record by the same JSON name, so that plan.ReadState reads the
// plan's part of a saved graft status --json: a field added to the record
// and not to the status would be lost.
func TestStatusHasEveryRecordField(t *testing.T) {
	has := map[string]bool{}
	for f := range reflect.TypeFor[PluginStatus]().Fields() {
		has[tagName(f)] = true
	}
	for f := range reflect.TypeFor[plan.Record]().Fields() {
		assert.True(t, has[tagName(f)], "plan.Record's %s is not in the status", tagName(f))
	}
}

func tagName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// TestStatusState: the plan's view of a saved status (plan.ReadState) is
// its records, and its digest is the one the same state had before the
// process facts left plan.Record (the hash below was made by that code):
// a saved plan made then is as fresh or as stale as it was.
func TestStatusState(t *testing.T) {
	st := &Status{Host: &HostInfo{PID: 1}, Plugins: []PluginStatus{
		{Name: "db", Run: "local", Status: "running", Hash: "sha256:aa", KeyID: "k",
			Instance: "u1", Generation: 2, PID: 10, Since: time.Unix(5, 0), Restarts: 1},
		{Name: "api", Run: "runner", Status: "unconfirmed", Hash: "sha256:bb", Uses: []string{"db", "cache"}, LastError: "boom", Runner: "r1",
			Instance: "u2", PID: 11, Role: "leader"},
		{Name: "cache", Run: "floating", Status: "failed", Hash: "sha256:cc",
			LastStop: &LastStop{Outcome: "Killed"}},
	}}
	view := readState(t, st)
	require.Len(t, view.Plugins, 3)
	assert.Equal(t, plan.Record{Name: "api", Run: spec.OnRunner, Status: plan.Unconfirmed, Hash: "sha256:bb", Uses: []string{"db", "cache"}, LastError: "boom", Runner: "r1"}, view.Plugins[1])
	const digest = "sha256:2d3b842fd649726df7f1d4ecdfb82868fa366d466be1916571605899eb167d0c"
	assert.Equal(t, digest, view.Digest())

	st.Plugins[0].PID, st.Plugins[0].Restarts, st.Plugins[1].Instance = 99, 7, "u3"
	assert.Equal(t, digest, readState(t, st).Digest(), "process facts are no part of it")
}

// readState is the plan's view of st, saved as graft status --json saves
// it.
func readState(t *testing.T, st *Status) *plan.State {
	t.Helper()
	b, err := json.Marshal(st)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "status.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	view, err := plan.ReadState(path)
	require.NoError(t, err)
	return view
}
