package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/termtext"
	"github.com/graftland/graft/plan"
)

// StatusCmd is `graft status [--json] [--watch]`.
type StatusCmd struct {
	JSON  bool `name:"json" help:"Print the state as JSON: {\"host\": {...}, \"plugins\": [...]}."`
	Watch bool `short:"w" name:"watch" help:"Keep printing as the host's state changes, until Ctrl-C: on a terminal the table is redrawn; on a pipe, a line per change (with --json, a document per line)."`
}

// Run prints what runs: a table, or the JSON that graft plan --state
// reads. It never starts a host; without one, nothing runs.
func (c *StatusCmd) Run(ctx context.Context, g *Globals) error {
	dir := g.stateDir(g.File)
	cl, up, err := g.client(ctx, dir)
	if err != nil {
		return err
	}
	if up && c.Watch {
		defer cl.Close()
		return c.watch(ctx, g, cl)
	}
	if c.Watch {
		return fmt.Errorf("%s graft status --watch follows a host", g.noHost(dir))
	}
	st := &hostapi.Status{Plugins: []hostapi.PluginStatus{}}
	if up {
		defer cl.Close()
		if st, err = cl.Status(ctx); err != nil {
			return err
		}
	}
	if c.JSON {
		return writeJSON(g.stdout, st)
	}
	if !up {
		fmt.Fprintln(g.stdout, g.noHost(dir))
		return nil
	}
	return writeStatus(g.stdout, st)
}

// writeStatus prints a host's status for people: a line about the host,
// then a table of its plugins. The status may come from a host over TCP:
// every text in it is escaped for the terminal, and the table's cells are
// cut.
func writeStatus(w io.Writer, st *hostapi.Status) error {
	h := st.Host
	if h == nil {
		h = &hostapi.HostInfo{}
	}
	fmt.Fprintf(w, "Host: pid %d", h.PID)
	if h.Version != "" {
		fmt.Fprintf(w, ", graft %s", termtext.Cell(h.Version, maxCell))
	}
	fmt.Fprintf(w, ", up %s, state dir %s", since(h.Since), termtext.Line(h.StateDir))
	if h.Applying != "" {
		fmt.Fprintf(w, "; applying: %s", termtext.Cell(h.Applying, maxHolder))
	}
	fmt.Fprintln(w)
	if len(st.Plugins) == 0 {
		fmt.Fprintln(w, "No plugins.")
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLUGIN\tRUN\tSTATUS\tINSTANCE\tGEN\tPID\tUPTIME\tRESTARTS\tHEALTH\tLAST STOP\tLAST ERROR")
	for _, r := range st.Plugins {
		run := string(r.Run)
		switch {
		case r.Role != "" && r.Backend == "etcd":
			run += " (" + r.Role + ", etcd)" // the file backend is the default
		case r.Role != "":
			run += " (" + r.Role + ")"
		}
		pid, uptime := "-", "-"
		if r.PID != 0 {
			pid = fmt.Sprint(r.PID)
		}
		if plan.Status(r.Status) == plan.Running && !r.Since.IsZero() {
			uptime = since(r.Since)
		}
		health, lastErr := "-", r.LastError
		if r.Health != "" {
			health = r.Health
		}
		if lastErr == "" && r.HealthError != "" {
			lastErr = "health check: " + r.HealthError
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\t%s\n", cell(r.Name), cell(run), cell(string(r.Status)), cell(shortID(r.Instance)),
			r.Generation, pid, uptime, r.Restarts, cell(health), cell(lastStop(r.LastStop)), cell(firstLine(lastErr)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeAdopted(w, st)
	return nil
}

// writeAdopted says which plugins run processes an earlier host started,
// adopted after an upgrade or a crash (docs/upgrade.md), when, and how
// long they went without a host.
func writeAdopted(w io.Writer, st *hostapi.Status) {
	var names []string
	var last *hostapi.Adopted
	for _, r := range st.Plugins {
		if a := r.Adopted; a != nil && plan.Status(r.Status) == plan.Running {
			names = append(names, cell(r.Name))
			if last == nil || a.At.After(last.At) || a.GapMillis > last.GapMillis {
				last = a
			}
		}
	}
	if last == nil {
		return
	}
	fmt.Fprintf(w, "\nAdopted from an earlier host %s ago, unwatched for %s: %s\n", since(last.At),
		time.Duration(last.GapMillis)*time.Millisecond, strings.Join(names, ", "))
}

// maxCell and maxHolder bound a cell of the status table, and who holds
// the apply lock, in runes.
const (
	maxCell   = 80
	maxHolder = 200
)

// cell is s as a cell of the status table: on one line, its control
// characters escaped, cut to maxCell runes.
func cell(s string) string { return termtext.Cell(s, maxCell) }

// writeJSON prints v as indented JSON, with what a terminal would act on
// escaped (termtext.JSON).
func writeJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termtext.JSON(b.Bytes()))
	return err
}

// lastStop is the outcome of a plugin's last stop, with the kind of its
// first cause when it had to force the plugin or could not confirm its end
// (every cause, in full, is in --json).
func lastStop(l *hostapi.LastStop) string {
	switch {
	case l == nil:
		return "-"
	case len(l.Causes) > 0 && l.Causes[0].Kind != "" && l.Causes[0].Kind != l.Outcome:
		return l.Outcome + " (" + l.Causes[0].Kind + ")"
	}
	return l.Outcome
}

// shortID shortens a UUID to its first 8 characters; instance names stay.
func shortID(id string) string {
	if len(id) == 36 && strings.Count(id, "-") == 4 {
		return id[:8]
	}
	if id == "" {
		return "-"
	}
	return id
}

func since(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}
