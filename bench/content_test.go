package bench

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/spec"
)

const (
	shippedBinaries = 100
	shippedSize     = 20 << 20
)

// TestShippedSpec checks the input of BenchmarkPlanCommandShipped: every
// plugin's executable is one of the binaries, and is digested.
func TestShippedSpec(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WriteBinaries(dir, 3, 1<<10))
	s, err := spec.Parse(filepath.Join(dir, "plugins.yaml"), ShippedSpec(30, 60, 1, 10, 3))
	require.NoError(t, err)
	require.Len(t, s.Plugins, 30)
	assert.Equal(t, []string{"./bin/p002", "--id", "5", "--v", "0"}, s.Plugins["p00005"].Command)
	assert.Contains(t, s.Fields("p00005"), "executable")
	assert.NotEqual(t, s.Fields("p00005")["executable"], s.Fields("p00004")["executable"])
}

// BenchmarkPlanCommandShipped is BenchmarkPlanCommand on a file whose
// 10,000 plugins run 100 binaries of 20 MB that sit beside it: graft
// digests each binary (through the state dir's cache). The timed runs
// find the cache warm; the first, cold, run is reported as cold-ms.
func BenchmarkPlanCommandShipped(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "graft")
	build := exec.Command("go", "build", "-o", bin, "github.com/graftland/graft/cmd/graft")
	out, err := build.CombinedOutput()
	require.NoError(b, err, string(out))
	require.NoError(b, WriteBinaries(dir, shippedBinaries, shippedSize))
	require.NoError(b, os.MkdirAll(filepath.Join(dir, ".graft", "digests"), 0o750))
	file := filepath.Join(dir, "plugins.yaml")
	require.NoError(b, os.WriteFile(file, ShippedSpec(bigPlugins, bigEdges, 2, 100, shippedBinaries), 0o644))
	old, err := spec.Parse(file, ShippedSpec(bigPlugins, bigEdges, 1, 100, shippedBinaries))
	require.NoError(b, err)
	state, err := json.Marshal(Status(old))
	require.NoError(b, err)
	stateFile := filepath.Join(dir, "state.json")
	require.NoError(b, os.WriteFile(stateFile, state, 0o644))
	plan := func() {
		cmd := exec.Command(bin, "plan", "--state", stateFile, file)
		if out, err := cmd.Output(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	require.NoError(b, os.RemoveAll(filepath.Join(dir, ".graft", "digests")))
	require.NoError(b, os.MkdirAll(filepath.Join(dir, ".graft", "digests"), 0o750))
	began := time.Now()
	plan()
	cold := time.Since(began)
	b.ResetTimer()
	for b.Loop() {
		plan()
	}
	b.ReportMetric(float64(cold.Milliseconds()), "cold-ms")
}
