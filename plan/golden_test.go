package plan

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/graftland/graft/spec"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/plan")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestGolden renders the plan of each testdata/plan/<case>: the desired
// plugins.yaml against a running state made by applying before.yaml (when
// there is one) and patching its records with running.json (when there is
// one). want.txt, want.json and want.md are the renderings; -update
// rewrites them.
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/plan/*")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(dirs), 12)
	// A command found on PATH is digested (spec.Spec.Fields): the
	// golden hashes must not depend on what this machine has installed.
	t.Setenv("PATH", "")
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			desired, err := spec.Load(filepath.Join(dir, "plugins.yaml"))
			require.NoError(t, err)
			desired = desired.WithKey(goldenKey)
			p, err := Diff(desired, goldenState(t, dir))
			require.NoError(t, err)

			var text, js, md bytes.Buffer
			require.NoError(t, p.WriteText(&text, TextOptions{}))
			require.NoError(t, p.WriteJSON(&js))
			require.NoError(t, p.WriteMarkdown(&md))
			golden(t, filepath.Join(dir, "want.txt"), text.Bytes())
			golden(t, filepath.Join(dir, "want.json"), js.Bytes())
			golden(t, filepath.Join(dir, "want.md"), md.Bytes())

			back, err := ReadJSON(&js)
			require.NoError(t, err)
			require.Equal(t, p, back, "the JSON form reads back to the same plan")
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./plan -run TestGolden -update to create it")
	require.Equal(t, string(want), string(got), "%s differs; run with -update if the change is intended", path)
}

// goldenKey keys the digests of the golden plans, as a host's key would.
var goldenKey = spec.DigestKey{'g', 'o', 'l', 'd', 'e', 'n'}

// goldenState is before.yaml applied, with running.json's patches.
func goldenState(t *testing.T, dir string) *State {
	t.Helper()
	st := &State{Plugins: []Record{}}
	if before, err := spec.Load(filepath.Join(dir, "before.yaml")); err == nil {
		before = before.WithKey(goldenKey)
		for _, name := range slices.Sorted(maps.Keys(before.Plugins)) {
			r := Applied(before, name)
			r.Status = Running
			st.Plugins = append(st.Plugins, r)
		}
	} else if !os.IsNotExist(err) {
		require.NoError(t, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "running.json"))
	if os.IsNotExist(err) {
		return st
	}
	require.NoError(t, err)
	var patches []json.RawMessage
	require.NoError(t, json.Unmarshal(data, &patches))
	for _, patch := range patches {
		var r Record
		require.NoError(t, json.Unmarshal(patch, &r))
		i := slices.IndexFunc(st.Plugins, func(x Record) bool { return x.Name == r.Name })
		if i < 0 {
			st.Plugins = append(st.Plugins, r)
			continue
		}
		require.NoError(t, json.Unmarshal(patch, &st.Plugins[i]))
	}
	return st
}
