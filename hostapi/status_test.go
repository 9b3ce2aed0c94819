package hostapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
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
		Host: &HostInfo{PID: 1, Version: "v1", Project: "shop", StateDir: "/s", Since: at(5), Spec: "sha256:ss", Applying: "me"},
		Plugins: []PluginStatus{{
			Record: plan.Record{Name: "api", Run: spec.Remote, Status: plan.Unconfirmed, LastError: "boom <&>", Hash: "sha256:bb",
				Uses: []string{"cache", "db"}, Fields: map[string]string{"command": "x", "env.A": "y"}, KeyID: "k", Runner: "r1"},
			Instance: "u2", Generation: 3, PID: 11, Since: at(6), Restarts: 2, Role: "leader", Address: "127.0.0.1:1",
			LastStop: &LastStop{Outcome: "Killed", Causes: []StopCause{{Kind: "LocalTerminationTimeout", Message: "m"}, {Message: "n"}}, At: at(7)},
		}, {
			Record: plan.Record{Name: "db", Run: spec.Local, Status: plan.Running},
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

// TestPluginJSONHasEveryField: the JSON form of a PluginStatus names every
// field of its record and of its process, no more: a field added to either
// and not to pluginJSON would be lost.
func TestPluginJSONHasEveryField(t *testing.T) {
	var want []string
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			want = append(want, tagName(f))
		}
	}
	walk(reflect.TypeFor[PluginStatus]())
	var got []string
	for f := range reflect.TypeFor[pluginJSON]().Fields() {
		got = append(got, tagName(f))
	}
	slices.Sort(want)
	slices.Sort(got)
	assert.Equal(t, want, got)
}

func tagName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// TestStatusState: the plan's view of a status is its records, and its
// digest is the one the same state had before the process facts left
// plan.Record (the hash below was made by that code): a saved plan made
// then is as fresh or as stale as it was.
func TestStatusState(t *testing.T) {
	st := &Status{Host: &HostInfo{PID: 1}, Plugins: []PluginStatus{
		{Record: plan.Record{Name: "db", Run: spec.Local, Status: plan.Running, Hash: "sha256:aa", KeyID: "k"},
			Instance: "u1", Generation: 2, PID: 10, Since: time.Unix(5, 0), Restarts: 1},
		{Record: plan.Record{Name: "api", Run: spec.Remote, Status: plan.Unconfirmed, Hash: "sha256:bb", Uses: []string{"db", "cache"}, LastError: "boom", Runner: "r1"},
			Instance: "u2", PID: 11, Role: "leader"},
		{Record: plan.Record{Name: "cache", Run: spec.Floating, Status: plan.Failed, Hash: "sha256:cc"},
			LastStop: &LastStop{Outcome: "Killed"}},
	}}
	view := st.State()
	require.Len(t, view.Plugins, 3)
	for i, p := range st.Plugins {
		assert.Equal(t, p.Record, view.Plugins[i])
	}
	const digest = "sha256:2d3b842fd649726df7f1d4ecdfb82868fa366d466be1916571605899eb167d0c"
	assert.Equal(t, digest, view.Digest())

	st.Plugins[0].PID, st.Plugins[0].Restarts, st.Plugins[1].Instance = 99, 7, "u3"
	assert.Equal(t, digest, st.State().Digest(), "process facts are no part of it")
}
