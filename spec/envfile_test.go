package spec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseEnvFile(t *testing.T) {
	got, err := parseEnvFile(`# a comment

PLAIN=value
export EXPORTED=yes
SPACED = padded value # trailing comment
HASH=a#b
SINGLE='it is $raw \n'
DOUBLE="line\nnext \"q\" \\ \$HOME"
MULTI="one
two"
EMPTY=
`)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"PLAIN":    "value",
		"EXPORTED": "yes",
		"SPACED":   "padded value",
		"HASH":     "a#b",
		"SINGLE":   `it is $raw \n`,
		"DOUBLE":   "line\nnext \"q\" \\ $HOME",
		"MULTI":    "one\ntwo",
		"EMPTY":    "",
	}, got)
}

func TestParseEnvFileErrors(t *testing.T) {
	for text, want := range map[string]string{
		"A=1\nnot a line\n":        "line 2: want KEY=value",
		"A=1\n\n1BAD=x\n":          `line 3: bad name: a name is letters`,
		"GRAFT_X=1\n":              "line 1: GRAFT_X: the GRAFT_ prefix is reserved",
		"A=\"open\nstill open\n":   "line 1: A: no closing \"",
		"S3CRET='hunter2' extra\n": "line 1: S3CRET: text after the closing quote",
	} {
		_, err := parseEnvFile(text)
		require.Error(t, err, text)
		assert.Contains(t, err.Error(), want)
		assert.NotContains(t, err.Error(), "hunter2", "an error never quotes a value")
	}
}
