package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/graftland/graft/internal/termtext"
)

// TextOptions shapes the text rendering of a plan.
type TextOptions struct {
	// Color adds ANSI colours; the CLI sets it only on a terminal and never
	// with NO_COLOR.
	Color bool
}

// symbols are the markers of the text rendering, Terraform's where it has
// one.
var symbols = map[Action]string{Start: "+", Stop: "-", Replace: "~", Restart: "↻", Keep: " "}

var colors = map[Action]string{Start: "32", Stop: "31", Replace: "33", Restart: "36"}

// WriteText renders the plan for people: a summary line, a line per change,
// then the order of the steps in waves. A plan may come from a host over
// TCP or a saved state, with names and reasons (a last error, a holder)
// that hold anything: what a terminal would act on is escaped
// (internal/termtext).
func (p *Plan) WriteText(w io.Writer, opt TextOptions) error {
	b := &strings.Builder{}
	paint := func(a Action, s string) string {
		if !opt.Color || colors[a] == "" {
			return s
		}
		return "\x1b[" + colors[a] + "m" + s + "\x1b[0m"
	}
	s := p.Summary
	if !p.HasChanges() {
		fmt.Fprintf(b, "No changes: %s is up to date (%s).\n", termtext.Line(p.Project), plural(s.Keep, "plugin", "plugins")+" running as declared")
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(b, "Plan for %s: %d to start, %d to replace, %d to restart, %d to stop, %d unchanged.\n\n",
		termtext.Line(p.Project), s.Start, s.Replace, s.Restart, s.Stop, s.Keep)

	width := 0
	for _, c := range p.Changes {
		if c.Action != Keep {
			width = max(width, len(termtext.Line(c.Plugin)))
		}
	}
	for _, a := range []Action{Start, Replace, Restart, Stop} {
		for _, c := range p.Changes {
			if c.Action != a {
				continue
			}
			reason := c.Reason
			if a == Start && c.Reason == "new" {
				reason = "new, run: " + string(c.Run)
			}
			fmt.Fprintf(b, "  %s %-*s  %s\n", paint(a, fmt.Sprintf("%s %-7s", symbols[a], a)), width, termtext.Line(c.Plugin), termtext.Line(reason))
		}
	}

	fmt.Fprintf(b, "\nOrder: %s in %s.\n", plural(s.Steps, "step", "steps"), plural(s.Waves, "wave", "waves"))
	conds := map[string]string{}
	for _, st := range p.Steps {
		conds[st.ID] = st.conditions()
	}
	for i, wave := range p.Waves {
		line := make([]string, len(wave))
		for j, id := range wave {
			line[j] = strings.Replace(id, ":", " ", 1) + conds[id]
		}
		fmt.Fprintf(b, "  %2d. %s\n", i+1, termtext.Line(strings.Join(line, ", ")))
	}
	_, err := io.WriteString(w, b.String())
	return err
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

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
