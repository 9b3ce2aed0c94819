package plan

import (
	"bytes"
	"regexp"
	"strings"
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

// TestMarkdownEscaped: in the Markdown form, a hostile name or reason
// adds no table cell, line, link, image, HTML, mention, code fence or
// Mermaid node, and no ANSI code: each is written escaped.
func TestMarkdownEscaped(t *testing.T) {
	name := "db|x</details><img src=x>`@team` [a](http://e) ![i](j)\x1b[31m\"]\n```"
	reason := "failed: *bold* _it_ ~~gone~~ #12 $x$ :smile: <b>&amp; \\| done\r\n| evil | row |"
	p := &Plan{
		Format: Format, Project: "shop<hr>",
		Changes: []Change{
			{Plugin: name, Action: Replace, Reason: reason, Run: "local"},
			{Plugin: "ok", Action: Restart, Reason: "x is replaced", Run: "local"},
		},
		Steps: []Step{
			{ID: "stop:ok", Op: OpStop, Plugin: "ok", After: []Edge{}},
			{ID: "stop:" + name, Op: OpStop, Plugin: name, After: []Edge{{Step: "stop:ok"}}},
			{ID: "start:" + name, Op: OpStart, Plugin: name, After: []Edge{{Step: "stop:" + name}}},
			{ID: "start:ok", Op: OpStart, Plugin: "ok", After: []Edge{{Step: "start:" + name}, {Step: "stop:ok"}}},
		},
		Waves:   [][]string{{"stop:ok"}, {"stop:" + name}, {"start:" + name}, {"start:ok"}},
		Summary: Summary{Replace: 1, Restart: 1, Steps: 4, Waves: 4},
	}
	var md bytes.Buffer
	require.NoError(t, p.WriteMarkdown(&md))
	out := md.String()
	raw := regexp.MustCompile("[\x00-\x09\x0b-\x1f\x7f\u0080-\u009f\u202a-\u202e]")
	assert.False(t, raw.MatchString(out), "no control characters, ANSI codes included: %q", out)

	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 27, "one line per row, node, edge and wave:\n%s", out)
	assert.Equal(t, `Plan for shop\<hr\>: 0 to start, 1 to replace, 1 to restart, 0 to stop, 0 unchanged.`, lines[0])
	// A table row has its four cells and no more: every | in a cell is
	// escaped; and no HTML tag, link, image, code span or mention opens.
	unescaped := regexp.MustCompile(`(^|[^\\])(\\\\)*[|<>\[\]` + "`" + `@*_~#$:]`)
	row := lines[4]
	assert.Equal(t, `| \~ replace | `, row[:len(`| \~ replace | `)])
	cells := regexp.MustCompile(`(^|[^\\])(\\\\)*\|`).FindAllStringIndex(row, -1)
	assert.Len(t, cells, 5, "%s", row)
	for _, cell := range strings.Split(row[len(`| \~ replace | `):len(row)-2], " | ") {
		assert.False(t, unescaped.MatchString(cell), "cell %q has an unescaped special character", cell)
	}
	assert.Contains(t, row, `db\|x\</details\>`)
	assert.Contains(t, row, `\<img src=x\>`)
	assert.Contains(t, row, `\\x1b\[31m`)
	assert.Contains(t, row, `\\r\\n\| evil \| row \|`)

	// The flowchart: four nodes, three edges, each label one quoted
	// string of entity codes, and the code block closes only once.
	assert.Equal(t, 2, strings.Count(out, "```"), "%s", out)
	label := regexp.MustCompile(`^  s\d\["[A-Za-z0-9 ._#;-]*"\]$`)
	for _, l := range lines[9:13] {
		assert.Regexp(t, label, l)
	}
	assert.Equal(t, []string{"  s0 --> s1", "  s1 --> s2", "  s2 --> s3", "  s0 --> s3"}, lines[13:17])
	assert.Equal(t, "  s1[\"stop db#124;x#60;#47;details#62;", lines[10][:len("  s1[\"stop db#124;x#60;#47;details#62;")])

	// The waves: their own <details> tags only.
	assert.Equal(t, 1, strings.Count(out, "</details>"), "%s", out)
	assert.Equal(t, 1, strings.Count(out, "<details>"), "%s", out)
	assert.False(t, unescaped.MatchString(strings.TrimPrefix(lines[22], "2. ")), "%s", lines[22])
}

// TestMarkdownWaves: the Markdown waves are the text form's: a step's op
// and plugin, a ':' in its name kept, and the conditions it waits for.
func TestMarkdownWaves(t *testing.T) {
	p := &Plan{
		Format: Format, Project: "shop",
		Changes: []Change{{Plugin: "db:1", Action: Start, Reason: "new", Run: "local"}, {Plugin: "api", Action: Start, Reason: "new", Run: "local"}},
		Steps: []Step{
			{ID: "start:db:1", Op: OpStart, Plugin: "db:1", After: []Edge{}},
			{ID: "start:api", Op: OpStart, Plugin: "api", After: []Edge{{Step: "start:db:1", Until: "healthy"}}},
		},
		Waves:   [][]string{{"start:db:1"}, {"start:api"}},
		Summary: Summary{Start: 2, Steps: 2, Waves: 2},
	}
	var md, text bytes.Buffer
	require.NoError(t, p.WriteMarkdown(&md))
	require.NoError(t, p.WriteText(&text, TextOptions{}))
	assert.Contains(t, md.String(), "\n1. start db\\:1\n2. start api (once db\\:1 healthy)\n")
	assert.Contains(t, text.String(), "   1. start db:1\n   2. start api (once db:1 healthy)\n")
}
