package main

import (
	"context"
	"fmt"

	"github.com/graftland/graft/hostapi"
)

// LogsCmd is `graft logs PLUGIN [-f] [-n N]`.
type LogsCmd struct {
	Plugin string `arg:"" predictor:"plugin" help:"The plugin."`
	Follow bool   `short:"f" name:"follow" help:"Keep printing lines as they come, until interrupted."`
	Lines  int    `short:"n" default:"20" help:"Lines to print from the end (at most 1048576); read from the end of the log, however large."`
}

// Run prints the plugin's output from its log in the state dir.
func (c *LogsCmd) Run(ctx context.Context, g *Globals) error {
	if c.Lines < 0 || c.Lines > hostapi.MaxLogLines {
		return fmt.Errorf("-n %d: want 0 to %d lines", c.Lines, hostapi.MaxLogLines)
	}
	dir := g.stateDir(g.File)
	cl, up, err := g.client(ctx, dir)
	if err != nil {
		return err
	}
	if !up {
		return fmt.Errorf("%s graft logs reads through the host", g.noHost(dir))
	}
	defer cl.Close()
	return cl.Logs(ctx, c.Plugin, c.Lines, c.Follow, g.stdout)
}
