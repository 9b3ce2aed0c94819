package plan

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/spec"
)

func TestReadState(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		path := filepath.Join(dir, "state.json")
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		return path
	}
	// A saved `graft status --json`: the host's and the process's facts
	// are no plan's concern, and are ignored.
	st, err := ReadState(write(`{"host": {"pid": 42}, "plugins": [{"name": "api", "run": "local", "status": "running", "instance": "x", "generation": 1, "pid": 7, "hash": "sha256:00", "lastStop": {"outcome": "Exited"}}]}`))
	require.NoError(t, err)
	assert.Equal(t, &State{Plugins: []Record{{Name: "api", Run: spec.Local, Status: Running, Hash: "sha256:00"}}}, st)

	for body, want := range map[string]string{
		`{"plugins": [{"name": "a", "status": "running"}, {"name": "a", "status": "running"}]}`: `plugins[1]: plugin "a" is listed twice`,
		`{"plugins": [{"name": "a", "status": "sleeping"}]}`:                                    `plugins[0] (a): unknown status "sleeping"`,
		`{"plugins": [{"status": "running"}]}`:                                                  `plugins[0]: missing name`,
		`{"plugins": [`:                                                                         `unexpected end of JSON input`,
	} {
		_, err := ReadState(write(body))
		require.Error(t, err, body)
		assert.Contains(t, err.Error(), "read state "+filepath.Join(dir, "state.json")+": ")
		assert.Contains(t, err.Error(), want)
	}
}

// TestStateDigest: a saved plan goes stale when, and only when, what Diff
// reads changes.
func TestStateDigest(t *testing.T) {
	base := State{Plugins: []Record{
		{Name: "b", Status: Running, Hash: "h2", Uses: []string{"a", "c"}},
		{Name: "a", Status: Running, Hash: "h1"},
	}}
	same := State{Plugins: []Record{
		{Name: "a", Status: Starting, Hash: "h1"},
		{Name: "b", Status: Standby, Hash: "h2", Uses: []string{"c", "a"}, LastError: "x"},
	}}
	assert.Equal(t, base.Digest(), same.Digest(), "order, live statuses and last errors do not matter")
	for _, change := range []func(*State){
		func(s *State) { s.Plugins[0].Hash = "h3" },
		func(s *State) { s.Plugins[0].Status = Failed },
		func(s *State) { s.Plugins[0].Status = Unconfirmed },
		func(s *State) { s.Plugins[0].Uses = []string{"a"} },
		func(s *State) { s.Plugins = s.Plugins[:1] },
	} {
		s := State{Plugins: append([]Record(nil), base.Plugins...)}
		change(&s)
		assert.NotEqual(t, base.Digest(), s.Digest())
	}
}

func TestDiffRefusesCyclicState(t *testing.T) {
	desired, err := spec.Parse("plugins.yaml", []byte("plugins: {}\n"))
	require.NoError(t, err)
	_, err = Diff(desired, &State{Plugins: []Record{
		{Name: "a", Status: Running, Uses: []string{"b"}},
		{Name: "b", Status: Running, Uses: []string{"a"}},
	}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "running state has a uses cycle")
}

func TestTextColor(t *testing.T) {
	desired, err := spec.Parse("plugins.yaml", []byte("plugins: {a: {command: [a]}}\n"))
	require.NoError(t, err)
	p, err := Diff(desired, nil)
	require.NoError(t, err)
	var plain, color bytes.Buffer
	require.NoError(t, p.WriteText(&plain, TextOptions{}))
	require.NoError(t, p.WriteText(&color, TextOptions{Color: true}))
	assert.NotContains(t, plain.String(), "\x1b[")
	assert.Contains(t, color.String(), "\x1b[32m+ start  \x1b[0m")
}

func TestReadJSONChecksFormat(t *testing.T) {
	_, err := ReadJSON(strings.NewReader(`{"format": "graft.plan/v9"}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `format "graft.plan/v9", want "graft.plan/v1"`)
}

// TestSavedSourceRoundTrip: a plan saved with its source reads back to the
// spec it was made from.
func TestSavedSourceRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(path, []byte("plugins: {a: {command: [a], dir: ./srv}}\n"), 0o644))
	desired, err := spec.Load(path)
	require.NoError(t, err)
	src := spec.Source{File: desired.File, Dir: desired.Dir, YAML: string(desired.Text)}
	back, err := src.Spec()
	require.NoError(t, err)
	assert.Equal(t, desired.Digest(), back.Digest())
	assert.Equal(t, dir, back.Dir)
	assert.Equal(t, filepath.Base(dir), back.Name)
}

func TestDiffWithReplace(t *testing.T) {
	desired, err := spec.Parse("plugins.yaml", []byte("plugins:\n  db: {command: [db]}\n  api: {command: [api], uses: [db]}\n  x: {command: [x]}\n"))
	require.NoError(t, err)
	st := &State{}
	for _, name := range []string{"api", "db", "x"} {
		r := Applied(desired, name)
		r.Status = Running
		st.Plugins = append(st.Plugins, r)
	}
	p, err := DiffWith(desired, st, Options{Replace: []string{"db"}})
	require.NoError(t, err)
	actions := map[string]Action{}
	for _, c := range p.Changes {
		actions[c.Plugin] = c.Action
	}
	assert.Equal(t, map[string]Action{"db": Replace, "api": Restart, "x": Keep}, actions)
	assert.Equal(t, "restart requested", p.Changes[slicesIndex(p.Changes, "db")].Reason)

	_, err = DiffWith(desired, st, Options{Replace: []string{"nope"}})
	assert.ErrorContains(t, err, "restart nope: no such plugin in plugins.yaml")
}

func slicesIndex(cs []Change, name string) int {
	for i, c := range cs {
		if c.Plugin == name {
			return i
		}
	}
	return -1
}
