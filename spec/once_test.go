package spec

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOnceForms: once is true, false or {timeout}; a one-shot's timeout
// defaults to an hour; the timeout is not part of the hash, so that
// changing it replaces nothing; anything else is refused at its place.
func TestOnceForms(t *testing.T) {
	dir := t.TempDir()
	parse := func(once string) (*Spec, error) {
		return parseAt(t, dir, "name: shop\nplugins:\n  m:\n    command: [true]\n    once: "+once+"\n")
	}
	s, err := parse("true")
	require.NoError(t, err)
	assert.True(t, s.Plugins["m"].Once.On)
	assert.Equal(t, time.Hour, s.Plugins["m"].Once.Timeout.Std(), "the default")
	plain := s.Hash("m")

	s, err = parse("{timeout: 5 minutes}")
	require.NoError(t, err)
	assert.True(t, s.Plugins["m"].Once.On, "a mapping makes a one-shot")
	assert.Equal(t, 5*time.Minute, s.Plugins["m"].Once.Timeout.Std())
	assert.Equal(t, plain, s.Hash("m"), "the timeout is not in the hash")

	s, err = parse("false")
	require.NoError(t, err)
	assert.False(t, s.Plugins["m"].Once.On)
	assert.NotEqual(t, plain, s.Hash("m"))

	file := filepath.Join(dir, "plugins.yaml")
	for once, want := range map[string]string{
		"yes":                  file + ":5:11: plugins.m.once: want true, false or {timeout: DURATION}",
		"{timeout: 0 seconds}": file + ":5:21: plugins.m.once.timeout: want a finite, positive duration",
		"{timeout: Infinity}":  file + ":5:21: plugins.m.once.timeout: want a finite, positive duration",
		"{tmeout: 1 second}":   file + ":5:12: plugins.m.once.tmeout: unknown field; did you mean \"timeout\"?",
	} {
		_, err := parse(once)
		require.Error(t, err, once)
		assert.Contains(t, err.Error(), want, once)
	}
}
