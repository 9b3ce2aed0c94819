package bench

import (
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/graftland/graft/internal/planner"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

const (
	bigPlugins = 10000
	bigEdges   = 30000
)

// TestBigSpec checks the benchmark input is what it claims to be.
func TestBigSpec(t *testing.T) {
	s, err := spec.Parse("plugins.yaml", Spec(bigPlugins, bigEdges, 2, 100))
	require.NoError(t, err)
	require.Len(t, s.Plugins, bigPlugins)
	edges := 0
	for _, p := range s.Plugins {
		edges += len(p.Uses)
	}
	require.Equal(t, bigEdges, edges)

	old, err := spec.Parse("plugins.yaml", Spec(bigPlugins, bigEdges, 1, 100))
	require.NoError(t, err)
	p, err := plan.Diff(s, State(old))
	require.NoError(t, err)
	require.Equal(t, bigPlugins/100, p.Summary.Replace)
	require.Positive(t, p.Summary.Restart)
}

// BenchmarkDiff is plan.Diff of 10,000 plugins with 30,000 uses edges
// against the running state of an older version in which one plugin in a
// hundred differs (and its consumers restart).
func BenchmarkDiff(b *testing.B) {
	desired, err := spec.Parse("plugins.yaml", Spec(bigPlugins, bigEdges, 2, 100))
	require.NoError(b, err)
	old, err := spec.Parse("plugins.yaml", Spec(bigPlugins, bigEdges, 1, 100))
	require.NoError(b, err)
	running := State(old)
	_ = desired.Digest() // a loaded spec hashes its plugins on first use: not part of the diff
	b.ResetTimer()
	for b.Loop() {
		if _, err := plan.Diff(desired, running); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiffUnchanged is plan.Diff of the same 10,000 plugins against
// their own running state: the plan of a CI run on a pull request that
// touches nothing graft runs.
func BenchmarkDiffUnchanged(b *testing.B) {
	desired, err := spec.Parse("plugins.yaml", Spec(bigPlugins, bigEdges, 2, 100))
	require.NoError(b, err)
	running := State(desired)
	_ = desired.Digest()
	for b.Loop() {
		if _, err := plan.Diff(desired, running); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad is spec.Parse of the same 10,000-plugin file.
func BenchmarkLoad(b *testing.B) {
	data := Spec(bigPlugins, bigEdges, 2, 100)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := spec.Parse("plugins.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanCommand runs the graft binary end to end: `graft plan
// --state` on the 10,000-plugin file, printing the text plan.
func BenchmarkPlanCommand(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "graft")
	build := exec.Command("go", "build", "-o", bin, "github.com/graftland/graft/cmd/graft")
	out, err := build.CombinedOutput()
	require.NoError(b, err, string(out))
	file := filepath.Join(dir, "plugins.yaml")
	require.NoError(b, os.WriteFile(file, Spec(bigPlugins, bigEdges, 2, 100), 0o644))
	old, err := spec.Parse(file, Spec(bigPlugins, bigEdges, 1, 100))
	require.NoError(b, err)
	state, err := json.Marshal(Status(old))
	require.NoError(b, err)
	stateFile := filepath.Join(dir, "state.json")
	require.NoError(b, os.WriteFile(stateFile, state, 0o644))
	b.ResetTimer()
	for b.Loop() {
		cmd := exec.Command(bin, "plan", "--state", stateFile, file)
		if out, err := cmd.Output(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}

// BenchmarkYAML is the floor of BenchmarkLoad: a bare yaml.v3 parse of the
// same file into a yaml.Node, in one piece, as any program reading the
// file with yaml.v3 would.
func BenchmarkYAML(b *testing.B) {
	data := Spec(bigPlugins, bigEdges, 2, 100)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var n yaml.Node
		if err := yaml.Unmarshal(data, &n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadHash is BenchmarkLoad and the hash of every plugin and of
// the whole spec, which a loaded spec computes on first use.
func BenchmarkLoadHash(b *testing.B) {
	data := Spec(bigPlugins, bigEdges, 2, 100)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		s, err := spec.Parse("plugins.yaml", data)
		if err != nil {
			b.Fatal(err)
		}
		_ = s.Digest()
	}
}

// TestSpecWithEnv checks the file of new plugins with env: each plugin has
// 3 to 5 env entries, the uses edges are those of Spec, and with no env
// SpecWith is Spec.
func TestSpecWithEnv(t *testing.T) {
	shape := Shape{MinEnv: 3, MaxEnv: 5}
	s, err := spec.Parse("plugins.yaml", SpecWith(bigPlugins, bigEdges, 2, 100, shape))
	require.NoError(t, err)
	bare, err := spec.Parse("plugins.yaml", Spec(bigPlugins, bigEdges, 2, 100))
	require.NoError(t, err)
	require.Len(t, s.Plugins, bigPlugins)
	counts := map[int]int{}
	for name, p := range s.Plugins {
		counts[len(p.Env)]++
		require.Equal(t, bare.Plugins[name].Uses, p.Uses, name)
		require.Equal(t, bare.Plugins[name].Command, p.Command, name)
	}
	require.Equal(t, []int{3, 4, 5}, slices.Sorted(maps.Keys(counts)))
	require.Equal(t, Spec(bigPlugins, bigEdges, 2, 100), SpecWith(bigPlugins, bigEdges, 2, 100, Shape{}))
}

// BenchmarkPlanNew is what graft plan does with no host, in one process:
// the load of 10,000 new plugins with 3 to 5 env entries each and the uses
// edges, their plan against an empty state under a one-time key, and its
// text.
func BenchmarkPlanNew(b *testing.B) {
	data := SpecWith(bigPlugins, bigEdges, 2, 100, Shape{MinEnv: 3, MaxEnv: 5})
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		s, err := spec.Parse("plugins.yaml", data)
		if err != nil {
			b.Fatal(err)
		}
		p, _, err := planner.Alone(s)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.WriteText(io.Discard, plan.TextOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
