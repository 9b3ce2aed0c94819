//go:build linux

package planner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// TestStateKey: a saved state is planned against under the key of its
// records' env digests, read from the local state dir, or a fresh key when
// none of its digests depends on one; otherwise an error that says why.
func TestStateKey(t *testing.T) {
	keyed := &plan.State{Plugins: []plan.Record{{Name: "api", KeyID: "0123456789abcdef", Fields: map[string]string{"env.PIN": "x"}}}}
	plain := &plan.State{Plugins: []plan.Record{{Name: "db", KeyID: "0123456789abcdef", Fields: map[string]string{"command": "x"}}}}
	old := &plan.State{Plugins: []plan.Record{{Name: "api", Fields: map[string]string{"env.PIN": "x"}}}}
	two := &plan.State{Plugins: []plan.Record{keyed.Plugins[0], {Name: "b", KeyID: "fedcba9876543210", Fields: map[string]string{"env.X": "y"}}}}

	_, fresh, err := stateKey("s.json", plain, t.TempDir())
	require.NoError(t, err)
	assert.True(t, fresh)

	var ke *stateKeyError
	_, _, err = stateKey("s.json", old, t.TempDir())
	require.ErrorAs(t, err, &ke)
	assert.Contains(t, err.Error(), "saved by an older graft")
	_, _, err = stateKey("s.json", two, t.TempDir())
	require.ErrorAs(t, err, &ke)
	assert.Contains(t, err.Error(), "keyed with 2 different digest keys (0123456789abcdef, fedcba9876543210)")

	dir := t.TempDir()
	_, _, err = stateKey("s.json", keyed, dir)
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, "--state s.json: its digests of env values are keyed with digest key 0123456789abcdef, and the state dir "+dir+" holds no digest key", err.Error())

	other := t.TempDir()
	k := spec.NewDigestKey()
	require.NoError(t, os.WriteFile(filepath.Join(other, digestKeyFile), []byte(k.Hex()+"\n"), 0o600))
	_, _, err = stateKey("s.json", keyed, other)
	require.ErrorAs(t, err, &ke)
	assert.Contains(t, err.Error(), "holds another one ("+k.ID()+")")
	keyed.Plugins[0].KeyID = k.ID()
	got, fresh, err := stateKey("s.json", keyed, other)
	require.NoError(t, err)
	assert.False(t, fresh)
	assert.Equal(t, k, got)

	require.NoError(t, os.Symlink(digestKeyFile, filepath.Join(dir, digestKeyFile))) // a loop: it cannot be opened
	_, _, err = stateKey("s.json", keyed, dir)
	require.ErrorAs(t, err, &ke)
	assert.Contains(t, err.Error(), "its key cannot be read here: ")
	assert.Contains(t, ke.Hint(), "plan against the host itself")
}
