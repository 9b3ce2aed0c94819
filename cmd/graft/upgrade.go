package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/termtext"
)

// UpgradeCmd is `graft upgrade [--binary PATH]`.
type UpgradeCmd struct {
	Binary      string `name:"binary" placeholder:"PATH" help:"The new graft program, on the host's machine (default: the path the host was started from, which a package upgrade replaced)."`
	LockTimeout string `name:"lock-timeout" placeholder:"DURATION" help:"Wait at most this long for an apply under way (default: until it ends)."`
	Wait        string `name:"wait" default:"1 minute" placeholder:"DURATION" help:"How long to wait for the new program to answer."`
}

// Run asks the host to execute the new program in its place, and waits
// until it answers (docs/upgrade.md).
func (c *UpgradeCmd) Run(ctx context.Context, g *Globals) error {
	req := hostapi.UpgradeRequest{Binary: c.Binary, Holder: holder("upgrade")}
	if c.LockTimeout != "" {
		wait, err := positiveDuration("--lock-timeout", c.LockTimeout)
		if err != nil {
			return err
		}
		req.LockWait = wait.Milliseconds()
	}
	wait, err := positiveDuration("--wait", c.Wait)
	if err != nil {
		return err
	}
	dir := g.stateDir(g.File)
	cl, up, err := g.client(ctx, dir)
	if err != nil {
		return err
	}
	if !up {
		return fmt.Errorf("%s nothing to upgrade: the next graft apply starts a host of this program", g.noHost(dir))
	}
	defer cl.Close()
	began := time.Now()
	report, st, err := cl.Upgrade(ctx, req, wait)
	if report != nil {
		fmt.Fprintf(g.stdout, "upgrading the host (pid %d) from %s to %s\n", report.PID, termtext.Text(report.From), termtext.Text(report.To))
		fmt.Fprintf(g.stdout, "  %d plugins run on; %d restart%s\n", len(report.Kept), len(report.Restarted), restarted(report))
		if report.Why != "" {
			fmt.Fprintf(g.stdout, "  %s\n", termtext.Text(report.Why))
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "✓ the host (pid %d) runs %s, after %s", st.Host.PID, termtext.Text(st.Host.Version), time.Since(began).Round(time.Millisecond))
	if gap := unwatched(st); gap > 0 {
		fmt.Fprintf(g.stdout, "; its local plugins went unwatched for %s", gap)
	}
	fmt.Fprintln(g.stdout)
	return nil
}

// unwatched is the longest time a plugin adopted went without a host.
func unwatched(st *hostapi.Status) time.Duration {
	var gap time.Duration
	for _, p := range st.Plugins {
		if p.Adopted != nil {
			gap = max(gap, time.Duration(p.Adopted.GapMillis)*time.Millisecond)
		}
	}
	return gap
}

// restarted names the plugins an upgrade restarts.
func restarted(r *hostapi.UpgradeReport) string {
	if len(r.Restarted) == 0 {
		return ""
	}
	names := make([]string, len(r.Restarted))
	for i, n := range r.Restarted {
		names[i] = termtext.Text(n)
	}
	return ": " + strings.Join(names, ", ") + " (they cannot outlive the host's program)"
}
