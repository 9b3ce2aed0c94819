package plan

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRenderEscaped: a plan made against a state from a host over TCP or
// a file may carry anything in its names and reasons (a last error, a
// holder); its text shows them escaped, and its JSON carries them as \u
// escapes, reading back the same.
func TestRenderEscaped(t *testing.T) {
	p := &Plan{
		Format: Format, Project: "shop",
		Changes: []Change{
			{Plugin: "db\x1b[2J", Action: Start, Reason: "failed: exited; \x1b]0;pwned\x07 \u202eexe.", Run: "local"},
			{Plugin: "gone\u009b", Action: Stop, Reason: "everything stops: evil\r\x1b[2K", Run: "local"},
		},
		Steps:   []Step{{ID: "start:db\x1b[2J", Op: OpStart, Plugin: "db\x1b[2J", After: After()}},
		Waves:   [][]string{{"start:db\x1b[2J"}},
		Summary: Summary{Start: 1, Stop: 1, Steps: 1, Waves: 1},
	}
	raw := regexp.MustCompile("[\x00-\x09\x0b-\x1f\x7f\u0080-\u009f\u202a-\u202e]")
	var text bytes.Buffer
	require.NoError(t, p.WriteText(&text, TextOptions{}))
	assert.False(t, raw.MatchString(text.String()), "%q", text.String())
	assert.Contains(t, text.String(), `+ start   db\x1b[2J   failed: exited; \x1b]0;pwned\a \u202eexe.`)
	assert.Contains(t, text.String(), `- stop    gone\u009b  everything stops: evil\r\x1b[2K`)
	assert.Contains(t, text.String(), `1. start db\x1b[2J`)

	var js bytes.Buffer
	require.NoError(t, p.WriteJSON(&js))
	assert.False(t, raw.MatchString(js.String()), "%s", js.String())
	back, err := ReadJSON(&js)
	require.NoError(t, err)
	assert.Equal(t, p, back)
}
