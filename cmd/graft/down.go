package main

import (
	"context"
	"fmt"
)

// DownCmd is `graft down`.
type DownCmd struct {
	Parallelism int `default:"10" help:"Steps run at once at most."`
}

// Run stops every plugin, consumers first, makes the host forget the
// applied spec, and ends the host.
func (c *DownCmd) Run(ctx context.Context, g *Globals) error {
	dir := g.stateDir(g.File)
	cl, up, err := g.client(ctx, dir)
	if err != nil {
		return err
	}
	if !up {
		fmt.Fprintln(g.stdout, g.noHost(dir), "Nothing to stop.")
		return nil
	}
	defer cl.Close()
	p := newProgress(g.stdout, g.colorful(g.stdout), terminal(g.stdout))
	err = cl.Down(ctx, hostRequest(c.Parallelism, "down"), p.On)
	p.Close()
	p.Summary(err)
	if err == nil {
		fmt.Fprintln(g.stdout, "The host has stopped.")
	}
	return err
}
