package plan

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/spec"
)

// contentSpec parses yaml in dir under one fixed key, as a host would.
func contentSpec(t *testing.T, dir, yaml string) *spec.Spec {
	t.Helper()
	s, err := spec.ParseWith(filepath.Join(dir, "plugins.yaml"), dir, []byte(yaml), spec.Options{Lookup: spec.VarsLookup(nil)})
	require.NoError(t, err)
	return s.WithKey(spec.DigestKey{3})
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o755))
}

func applied(s *spec.Spec) *State {
	st := &State{}
	for name := range s.Plugins {
		r := Applied(s, name)
		r.Status = Running
		st.Plugins = append(st.Plugins, r)
	}
	return st
}

const shipped = `name: shop
plugins:
  api:
    command: [bin/api]
    envFile: [api.env]
    files: [conf/api.conf]
  web:
    command: [bin/web]
    uses: [api]
  other:
    command: [bin/web, --other]
`

// TestContentChanges: a binary rebuilt at the same path replaces its
// plugin, names the executable, and restarts its consumers; a changed env
// file names the key and never the value; an unchanged tree plans nothing.
func TestContentChanges(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "bin/api"), "api v1")
	writeFile(t, filepath.Join(dir, "bin/web"), "web v1")
	writeFile(t, filepath.Join(dir, "api.env"), "TOKEN=first-secret-value\n")
	writeFile(t, filepath.Join(dir, "conf/api.conf"), "a")
	running := applied(contentSpec(t, dir, shipped))

	p, err := Diff(contentSpec(t, dir, shipped), running)
	require.NoError(t, err)
	assert.False(t, p.HasChanges(), "the same files: nothing to do")

	writeFile(t, filepath.Join(dir, "bin/api"), "api v2")
	p, err = Diff(contentSpec(t, dir, shipped), running)
	require.NoError(t, err)
	text := render(t, p)
	assert.Contains(t, text, "~ replace api  changed executable bin/api\n")
	assert.Contains(t, text, "↻ restart web  api is replaced\n")
	assert.NotContains(t, text, "other")
	assert.Equal(t, []string{"executable"}, change(p, "api").Fields)

	writeFile(t, filepath.Join(dir, "bin/api"), "api v1")
	writeFile(t, filepath.Join(dir, "api.env"), "TOKEN=second-secret-value\n")
	writeFile(t, filepath.Join(dir, "conf/api.conf"), "b")
	p, err = Diff(contentSpec(t, dir, shipped), running)
	require.NoError(t, err)
	text = render(t, p)
	assert.Contains(t, text, "~ replace api  changed env.TOKEN, file conf/api.conf\n")
	var js bytes.Buffer
	require.NoError(t, p.WriteJSON(&js))
	for _, out := range []string{text, js.String()} {
		assert.NotContains(t, out, "secret-value", "the plan names the key, never the value")
	}
}

func render(t *testing.T, p *Plan) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, p.WriteText(&b, TextOptions{}))
	return b.String()
}

func change(p *Plan, name string) Change {
	for _, c := range p.Changes {
		if c.Plugin == name {
			return c
		}
	}
	return Change{}
}
