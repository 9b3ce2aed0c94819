//go:build linux

// Package systemd_test checks the example units with systemd's own tools:
// systemd-analyze verify finds no problem in either, and systemd-analyze
// security rates the sandbox of each as README.md says.
package systemd_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/graftland/graft/internal/testprog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// installed is where the units expect graft; the tests point them at a
// graft built for the test instead.
const installed = "/usr/local/bin/graft"

// The highest exposure (systemd-analyze security, 0 to 10) each unit may
// rate; README.md gives the figures.
var maxExposure = map[string]float64{
	"graft-host.service":      4,
	"graft-host-root.service": 5,
}

// TestUnits verifies both units, with ExecStart at a graft built from this
// checkout, and rates their sandboxes.
func TestUnits(t *testing.T) {
	testprog.Need(t, "systemd-analyze", "systemd")
	graft := buildGraft(t)
	for name, most := range maxExposure {
		t.Run(name, func(t *testing.T) {
			unit := copyUnit(t, name, func(s string) string { return strings.ReplaceAll(s, installed, graft) })
			out, err := verify(unit)
			require.NoError(t, err, "systemd-analyze verify %s:\n%s", name, out)
			assert.Empty(t, out, "systemd-analyze verify %s warns", name)

			exposure, out := security(t, unit)
			assert.LessOrEqual(t, exposure, most, "systemd-analyze security %s:\n%s", name, out)
		})
	}
}

// TestVerifyFails shows that verify, as TestUnits runs it, catches what
// it must: a misspelt directive, and an ExecStart whose program is not
// there (why TestUnits points the units at a graft it built).
func TestVerifyFails(t *testing.T) {
	testprog.Need(t, "systemd-analyze", "systemd")
	graft := buildGraft(t)
	t.Run("misspelt directive", func(t *testing.T) {
		unit := copyUnit(t, "graft-host.service", func(s string) string {
			s = strings.ReplaceAll(s, installed, graft)
			return strings.Replace(s, "\nProtectSystem=", "\nProtectSytem=", 1)
		})
		out, err := verify(unit)
		assert.True(t, err != nil || out != "", "verify passed a unit with ProtectSytem=")
		assert.Contains(t, out, "Unknown key 'ProtectSytem'")
	})
	t.Run("no program", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "graft")
		unit := copyUnit(t, "graft-host.service", func(s string) string { return strings.ReplaceAll(s, installed, missing) })
		out, err := verify(unit)
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "verify of a unit without its program: %v\n%s", err, out)
		assert.Contains(t, out, missing+" is not executable")
	})
}

// buildGraft builds cmd/graft into a temporary directory.
func buildGraft(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "graft")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/graft").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// copyUnit copies the unit name into a temporary directory, changed by
// edit, and returns its path: verify names the unit after its file.
func copyUnit(t *testing.T, name string, edit func(string) string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(edit(string(b))), 0o644))
	return path
}

// verify runs systemd-analyze verify on the unit file at path, and returns
// all it printed.
func verify(path string) (string, error) {
	out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// overall is the last line of systemd-analyze security, after an arrow
// that a locale without UTF-8 makes "->".
var overall = regexp.MustCompile(`(?m)Overall exposure level for (\S+): (\d+\.\d+) `)

// security rates the unit file at path with systemd-analyze security
// --offline=true, and returns its overall exposure and all it printed.
func security(t *testing.T, path string) (float64, string) {
	t.Helper()
	cmd := exec.Command("systemd-analyze", "security", "--offline=true", "--no-pager", path)
	cmd.Env = append(os.Environ(), "SYSTEMD_COLORS=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "systemd-analyze security %s:\n%s", path, out)
	m := overall.FindStringSubmatch(string(out))
	require.NotNil(t, m, "no overall exposure in:\n%s", out)
	require.Equal(t, filepath.Base(path), m[1])
	exposure, err := strconv.ParseFloat(m[2], 64)
	require.NoError(t, err)
	return exposure, string(out)
}
