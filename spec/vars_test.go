package spec

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parseVars(t *testing.T, vars map[string]string, yaml string) (*Spec, error) {
	t.Helper()
	dir := t.TempDir()
	return ParseWith(filepath.Join(dir, "plugins.yaml"), dir, []byte(yaml), Options{Lookup: VarsLookup(vars)})
}

func TestVariables(t *testing.T) {
	s, err := parseVars(t, map[string]string{"TAG": "v2", "PORT": "9530", "EMPTY": "", "TOKEN": "s3cret"}, `plugins:
  api:
    command: [./api, "--tag=${TAG}", "${MISSING:-fallback}", "${EMPTY:-empty-means-unset}", "cost: $$5", "$HOME stays"]
    env: {TOKEN: "${TOKEN}", "${KEY}": literal}
  relay:
    run: floating
    command: [./relay]
    elect:
      dir: shared
      port: ${PORT}
`)
	require.NoError(t, err)
	assert.Equal(t, []string{"./api", "--tag=v2", "fallback", "empty-means-unset", "cost: $5", "$HOME stays"}, s.Plugins["api"].Command)
	assert.Equal(t, map[string]string{"TOKEN": "s3cret", "${KEY}": "literal"}, s.Plugins["api"].Env, "keys are not substituted")
	assert.Equal(t, 9530, s.Plugins["relay"].Elect.Port, "a plain scalar is read as what the variable holds")
	assert.Equal(t, map[string]string{"TAG": "v2", "PORT": "9530", "EMPTY": "", "TOKEN": "s3cret"}, s.Vars, "the variables used, for the host")
}

func TestVariableErrors(t *testing.T) {
	_, err := parseVars(t, nil, `plugins:
  api:
    command: [./api, "${API_TOKEN}"]
    dir: "${WORKDIR:?set WORKDIR to the checkout}"
    env: {A: "${unclosed"}
    stopSignal: "${1BAD}"
`)
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "plugins.yaml:3:22: plugins.api.command[1]: variable API_TOKEN is not set, and ${API_TOKEN} has no default")
	assert.Contains(t, msg, "plugins.yaml:4:10: plugins.api.dir: ${WORKDIR}: set WORKDIR to the checkout")
	assert.Contains(t, msg, `plugins.yaml:5:14: plugins.api.env.A: unclosed ${ in "${unclosed"; write $$ for a literal $`)
	assert.Contains(t, msg, "plugins.api.stopSignal: bad variable ${1BAD}")
}

// TestVariablesInHash: the resolved value is what the hash covers, so a
// changed CI secret changes the plugin.
func TestVariablesInHash(t *testing.T) {
	yaml := "plugins:\n  api: {command: [./api, \"${V}\"]}\n"
	a, err := parseVars(t, map[string]string{"V": "1"}, yaml)
	require.NoError(t, err)
	b, err := parseVars(t, map[string]string{"V": "2"}, yaml)
	require.NoError(t, err)
	k := DigestKey{7}
	assert.NotEqual(t, a.WithKey(k).Hash("api"), b.WithKey(k).Hash("api"))
}

// TestResolved: --show-resolved prints the file resolved, env values
// masked.
func TestResolved(t *testing.T) {
	s, err := parseVars(t, map[string]string{"TAG": "v2", "TOKEN": "s3cret"}, `plugins:
  api:
    command: [./api, "--tag=${TAG}", "$$HOME"]
    env: {TOKEN: "${TOKEN}", PLAIN: visible-in-file}
`)
	require.NoError(t, err)
	out, err := s.Resolved()
	require.NoError(t, err)
	assert.Contains(t, string(out), "--tag=v2")
	assert.Contains(t, string(out), "$HOME")
	assert.Contains(t, string(out), "TOKEN: (sensitive)")
	assert.Contains(t, string(out), "PLAIN: (sensitive)")
	assert.NotContains(t, string(out), "s3cret")
	assert.NotContains(t, string(out), "visible-in-file")
}
