package termtext

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcödé, 日本":  "plain text, ünïcödé, 日本",
		"\x1b]0;pwned\x07":         `\x1b]0;pwned\a`,
		"\r\x1b[2Khidden":          `\r\x1b[2Khidden`,
		"two\nlines\ttab":          `two\nlines\ttab`,
		"del\x7f nul\x00":          `del\x7f nul\x00`,
		"c1 \u009b31m csi":         `c1 \u009b31m csi`,
		"raw \x9b byte":            `raw \x9b byte`,
		"bidi \u202egnp.exe":       `bidi \u202egnp.exe`,
		"isolate \u2066x\u2069":    `isolate \u2066x\u2069`,
		"marks \u200e\u200f\u061c": `marks \u200e\u200f\u061c`,
		"sep \u2028 \u2029":        `sep \u2028 \u2029`,
		`a literal \x1b stays`:     `a literal \x1b stays`,
		"bad utf-8 \xff\xfe":       `bad utf-8 \xff\xfe`,
		"":                         "",
	} {
		assert.Equal(t, want, Line(in), "%q", in)
	}
}

func TestText(t *testing.T) {
	assert.Equal(t, "start db: exited\n  last output:\n\tline \\x1b]0;pwned\\a\n  \\r\\x1b[2K", Text("start db: exited\n  last output:\n\tline \x1b]0;pwned\a\n  \r\x1b[2K"))
}

func TestCut(t *testing.T) {
	assert.Equal(t, "short", Cut("short", 80))
	assert.Equal(t, strings.Repeat("é", 80), Cut(strings.Repeat("é", 80), 80))
	got := Cut(strings.Repeat("é", 81), 80)
	assert.Equal(t, strings.Repeat("é", 79)+"…", got)
	assert.Equal(t, 80, len([]rune(got)))
	assert.Equal(t, `\x1b[…`, Cell("\x1b[2J", 6))
}

// TestJSON: the escaped JSON decodes to the same values, and holds none of
// what a terminal acts on.
func TestJSON(t *testing.T) {
	v := map[string]any{"tail": "\x1b]0;pwned\x07 \u009b \u202e \x7f", "name": "ok", "n": 1}
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	safe := JSON(b)
	assert.Equal(t, Text(string(safe)), string(safe), "nothing left to escape: %s", safe)
	var back map[string]any
	require.NoError(t, json.Unmarshal(safe, &back))
	assert.Equal(t, v["tail"], back["tail"])
	assert.Contains(t, string(safe), `\u009b \u202e \u007f`)
	plain := []byte(`{"a": "b"}`)
	assert.Equal(t, plain, JSON(plain))
}
