package main

import (
	"context"
	"fmt"

	"github.com/graftland/graft/hostapi"
)

// RestartCmd is `graft restart PLUGIN...`.
type RestartCmd struct {
	Plugins     []string `arg:"" predictor:"plugin" help:"The plugins to replace."`
	Parallelism int      `default:"10" help:"Steps run at once at most."`
}

// Run replaces the plugins and restarts their consumers, planned like any
// other change of the last applied spec.
func (c *RestartCmd) Run(ctx context.Context, g *Globals) error {
	dir := g.stateDir(g.File)
	cl, up, err := g.client(ctx, dir)
	if err != nil {
		return err
	}
	if !up {
		return fmt.Errorf("%s Nothing to restart.", g.noHost(dir))
	}
	defer cl.Close()
	req := hostRequest(c.Parallelism, "restart")
	req.Restart = c.Plugins
	p := newProgress(g.stdout, g.colorful(g.stdout), terminal(g.stdout))
	err = cl.Restart(ctx, req, p.On)
	p.Close()
	p.Summary(err)
	return err
}

func hostRequest(parallelism int, command string) hostapi.ApplyRequest {
	return hostapi.ApplyRequest{Parallelism: parallelism, Holder: holder(command)}
}
