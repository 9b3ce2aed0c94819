package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/graftland/graft/internal/termtext"
)

// TextOptions shapes the text rendering of a plan.
type TextOptions struct {
	// Color adds ANSI colours; the CLI sets it only on a terminal and never
	// with NO_COLOR.
	Color bool
}

// WriteText renders the plan for people: a summary line, a line per change,
// then the order of the steps in waves. A plan may come from a host over
// TCP or a saved state, with names and reasons (a last error, a holder)
// that hold anything: what a terminal would act on is escaped
// (internal/termtext).
func (p *Plan) WriteText(w io.Writer, opt TextOptions) error {
	b := &strings.Builder{}
	paint := func(r *actionRow, s string) string {
		if !opt.Color || r.color == "" {
			return s
		}
		return "\x1b[" + r.color + "m" + s + "\x1b[0m"
	}
	b.WriteString(p.summaryLine(termtext.Line(p.Project)) + "\n")
	if !p.HasChanges() {
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString("\n")

	width := 0
	for _, c := range p.Changes {
		// An action no row has is not listed, but is measured, as
		// plans from a later graft may have one.
		if r := actionOf(c.Action); r == nil || r.listed() {
			width = max(width, len(termtext.Line(c.Plugin))+len(c.orderNote()))
		}
	}
	for _, r := range listedActions() {
		a := r.action
		label := paint(r, r.marker+" "+padded(string(a), 7))
		for _, c := range p.Changes {
			if c.Action != a {
				continue
			}
			reason := c.Reason
			if a == Start && c.Reason == "new" {
				reason = "new, run: " + string(c.Run)
			}
			// fmt's "  %s %-*s  %s\n", written out: a large plan has a line
			// for each of thousands of plugins.
			b.WriteString("  " + label + " " + padded(termtext.Line(c.Plugin)+c.orderNote(), width) + "  ")
			b.WriteString(termtext.Line(reason))
			b.WriteByte('\n')
		}
	}

	fmt.Fprintf(b, "\n%s.\n", p.orderLine())
	for i, line := range p.waveLines() {
		fmt.Fprintf(b, "  %2d. %s\n", i+1, termtext.Line(line))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// summaryLine is the plan's first line, with the project's name as
// project (escaped by the caller for its output).
func (p *Plan) summaryLine(project string) string {
	s := p.Summary
	if !p.HasChanges() {
		return fmt.Sprintf("No changes: %s is up to date (%s as declared).", project, plural(s.Keep, "plugin", "plugins"))
	}
	counts := make([]string, 0, len(actionTable))
	for i := range actionTable {
		r := &actionTable[i]
		if n := *r.count(&s); n > 0 || r.shown == alwaysShown {
			counts = append(counts, strconv.Itoa(n)+" "+r.tally)
		}
	}
	return "Plan for " + project + ": " + strings.Join(counts, ", ") + "."
}

// waveLines are the plan's waves as its text and Markdown forms list
// them: each step as its op and plugin ("start db", the first ':' of its
// id alone, since a name may hold others), with the conditions it waits
// for ("(once db healthy)").
func (p *Plan) waveLines() []string {
	conds := map[string]string{}
	for _, st := range p.Steps {
		conds[st.ID] = st.conditions()
	}
	lines := make([]string, len(p.Waves))
	for i, wave := range p.Waves {
		line := make([]string, len(wave))
		for j, id := range wave {
			line[j] = strings.Replace(id, ":", " ", 1) + conds[id]
		}
		lines[i] = strings.Join(line, ", ")
	}
	return lines
}

// orderLine says how many steps and waves the plan has.
func (p *Plan) orderLine() string {
	return fmt.Sprintf("Order: %s in %s", plural(p.Summary.Steps, "step", "steps"), plural(p.Summary.Waves, "wave", "waves"))
}

// WriteJSON renders the plan in its documented JSON form, indented, with
// the characters a terminal would act on escaped as \u escapes
// (termtext.JSON), which encoding/json leaves in strings.
func (p *Plan) WriteJSON(w io.Writer) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		return err
	}
	_, err := w.Write(termtext.JSON(b.Bytes()))
	return err
}

// ReadJSON reads a plan saved by WriteJSON and checks its format.
func ReadJSON(r io.Reader) (*Plan, error) {
	var p Plan
	if err := json.NewDecoder(r).Decode(&p); err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	if p.Format != Format {
		return nil, fmt.Errorf("read plan: format %q, want %q", p.Format, Format)
	}
	return &p, nil
}

// padded is s followed by spaces up to width runes, as fmt's %-*s.
func padded(s string, width int) string {
	if n := width - utf8.RuneCountInString(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
