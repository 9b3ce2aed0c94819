package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/graftland/graft/plan"
)

// StatusCmd is `graft status [--json]`.
type StatusCmd struct {
	JSON bool `name:"json" help:"Print the state as JSON: {\"host\": {...}, \"plugins\": [...]}."`
}

// Run prints what runs: a table, or the JSON that graft plan --state
// reads. It never starts a host; without one, nothing runs.
func (c *StatusCmd) Run(ctx context.Context, g *Globals) error {
	dir := g.stateDir(g.File)
	cl, up, err := g.client(ctx, dir)
	if err != nil {
		return err
	}
	st := &plan.State{Plugins: []plan.Record{}}
	if up {
		defer cl.Close()
		if st, err = cl.Status(ctx); err != nil {
			return err
		}
	}
	if c.JSON {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	if !up {
		fmt.Fprintln(g.stdout, g.noHost(dir))
		return nil
	}
	h := st.Host
	fmt.Fprintf(g.stdout, "Host: pid %d, up %s, state dir %s", h.PID, since(h.Since), h.StateDir)
	if h.Applying != "" {
		fmt.Fprintf(g.stdout, "; applying: %s", h.Applying)
	}
	fmt.Fprintln(g.stdout)
	if len(st.Plugins) == 0 {
		fmt.Fprintln(g.stdout, "No plugins.")
		return nil
	}
	fmt.Fprintln(g.stdout)
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLUGIN\tRUN\tSTATUS\tINSTANCE\tGEN\tPID\tUPTIME\tRESTARTS\tLAST STOP\tLAST ERROR")
	for _, r := range st.Plugins {
		run := string(r.Run)
		if r.Role != "" {
			run += " (" + r.Role + ")"
		}
		pid, uptime := "-", "-"
		if r.PID != 0 {
			pid = fmt.Sprint(r.PID)
		}
		if r.Status == plan.Running && !r.Since.IsZero() {
			uptime = since(r.Since)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\n", r.Name, run, r.Status, shortID(r.Instance),
			r.Generation, pid, uptime, r.Restarts, lastStop(r.LastStop), firstLine(r.LastError))
	}
	return tw.Flush()
}

// lastStop is the outcome of a plugin's last stop, with the kind of its
// first cause when it had to force the plugin or could not confirm its end
// (every cause, in full, is in --json).
func lastStop(l *plan.LastStop) string {
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
