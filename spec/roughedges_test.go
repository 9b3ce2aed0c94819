package spec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryErrorHasItsPlace: the errors yaml.v3 gives without a line (an
// unknown anchor, bytes that are not UTF-8) get the file, line and column
// of what caused them; a NUL in an env file is refused at its line; and a
// problem is one line of text, whatever its path holds.
func TestEveryErrorHasItsPlace(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nul.env"), []byte("A=1\nB=x\x00y\n"), 0o600))
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown anchor", "plugins:\n  a: {command: [x], env: *nope}\n  b: {command: [*nope2]}\n",
			"plugins.yaml:2:26: YAML syntax: *nope names no anchor (&nope) written before it"},
		{"not UTF-8", "plugins:\n  é: {command: [x\xff]}\n", "plugins.yaml:2:18: not UTF-8: a plugins file is UTF-8 text"},
		{"not UTF-8 in a comment", "# \xfe\nplugins: {}\n", "plugins.yaml:1:3: not UTF-8: a plugins file is UTF-8 text"},
		{"NUL in an env file", "plugins:\n  a: {command: [sh], envFile: [nul.env]}\n",
			"plugins.yaml:2:32: plugins.a.envFile[0]: nul.env:2: B: a NUL byte, which no environment can hold"},
		{"NUL in dir", "plugins:\n  a: {command: [sh], dir: \"/tmp\\0x\"}\n", "plugins.yaml:2:27: plugins.a.dir: contains a NUL byte"},
		{"newline in a path", "plugins:\n  a: {command: [sh], files: [\"no\\nsuch\\e[2J\"]}\n",
			`plugins.yaml:2:30: plugins.a.files[0]: no\nsuch\x1b[2J: no such file or directory`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(filepath.Join(dir, "plugins.yaml"), []byte(tc.yaml))
			require.Error(t, err)
			assert.Equal(t, filepath.Join(dir, tc.want), err.Error())
		})
	}
}
