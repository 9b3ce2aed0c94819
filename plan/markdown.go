package plan

import (
	"fmt"
	"io"
	"strings"

	"github.com/graftland/graft/internal/termtext"
)

// WriteMarkdown renders the plan for a pull request's comment
// (docs/plan-format.md, "Markdown"): the summary line; a table of the
// changes with their action, plugin, placement and reason; the step graph
// as a Mermaid flowchart, which GitHub and GitLab draw; and the waves in a
// collapsed <details> block. It never writes ANSI codes. Names and reasons
// may hold anything (a plan may be made against a state from a host over
// TCP or a file): control characters are escaped as in the text form, and
// whatever Markdown, HTML or Mermaid would act on is escaped too, so a
// name cannot add a link, an image, HTML, a table column or a line.
func (p *Plan) WriteMarkdown(w io.Writer) error {
	b := &strings.Builder{}
	b.WriteString(p.summaryLine(mdText(p.Project)) + "\n")
	if !p.HasChanges() {
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString("\n| action | plugin | placement | reason |\n|---|---|---|---|\n")
	for _, r := range listedActions() {
		for _, c := range p.Changes {
			if c.Action == r.action {
				fmt.Fprintf(b, "| %s %s | %s | %s | %s |\n", mdText(r.marker), r.action, mdText(c.Plugin+c.orderNote()), mdText(string(c.Run)), mdText(c.Reason))
			}
		}
	}
	b.WriteString("\n```mermaid\n")
	p.writeMermaid(b)
	b.WriteString("```\n")
	fmt.Fprintf(b, "\n<details><summary>%s</summary>\n\n", p.orderLine())
	for i, line := range p.waveLines() {
		fmt.Fprintf(b, "%d. %s\n", i+1, mdText(line))
	}
	b.WriteString("\n</details>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMermaid writes the step graph as a Mermaid flowchart: a node per
// step, named by its place in the plan (s0, s1, ...) and labelled with
// its op and plugin, and an edge from each step to every step that waits
// for it. An edge to a step the plan does not have is left out.
func (p *Plan) writeMermaid(b *strings.Builder) {
	b.WriteString("flowchart LR\n")
	node := map[string]string{}
	for i, st := range p.Steps {
		node[st.ID] = fmt.Sprintf("s%d", i)
		fmt.Fprintf(b, "  s%d[\"%s\"]\n", i, mermaidLabel(string(st.Op)+" "+st.Plugin))
	}
	for i, st := range p.Steps {
		for _, a := range st.After {
			from, ok := node[a.Step]
			switch {
			case !ok:
			case a.Until != "": // the condition the step waits for
				fmt.Fprintf(b, "  %s -->|\"%s\"| s%d\n", from, mermaidLabel(string(a.Until)), i)
			default:
				fmt.Fprintf(b, "  %s --> s%d\n", from, i)
			}
		}
	}
}

// mdSpecial are the characters Markdown (CommonMark, and GitHub's and
// GitLab's extensions: tables, strikethrough, mentions, references,
// emoji, math) may act on inside a line: each is written escaped with a
// backslash, which CommonMark allows before any ASCII punctuation. The
// characters that act only at the start of a line (-, +, ., digits) are
// left: no escaped text starts a line.
const mdSpecial = "\\`*_{}[]<>|~&!#@:$"

// mdText is s for one line of Markdown: its control characters escaped
// (termtext.Line), then its Markdown special characters.
func mdText(s string) string {
	s = termtext.Line(s)
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(mdSpecial, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mermaidLabel is s as the text of a quoted Mermaid label: its control
// characters escaped (termtext.Line), then every character but letters,
// digits, spaces and -_. written as a Mermaid entity code (#35; for #),
// so that no quote, bracket, backtick or HTML in it ends the label, the
// code block or the flowchart.
func mermaidLabel(s string) string {
	s = termtext.Line(s)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == ' ', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "#%d;", r)
		}
	}
	return b.String()
}
