package main

import (
	"context"
	"fmt"
)

// RunCmd is `graft run PLUGIN`.
type RunCmd struct {
	Plugin      string `arg:"" predictor:"plugin" help:"The one-shot plugin (once: true) to run again."`
	Parallelism int    `default:"10" help:"Steps run at once at most."`
}

// Run runs a one-shot plugin again on purpose, planned like graft restart:
// it is replaced, and its consumers restart as the rules of one-shots say
// (docs/semantics.md, "One-shot plugins"). The host refuses a plugin that
// is not a one-shot.
func (c *RunCmd) Run(ctx context.Context, g *Globals) error {
	dir := g.stateDir(g.File)
	cl, up, err := g.client(ctx, dir)
	if err != nil {
		return err
	}
	if !up {
		return fmt.Errorf("%s Nothing to run.", g.noHost(dir))
	}
	defer cl.Close()
	req := hostRequest(c.Parallelism, "run")
	req.Restart, req.Once = []string{c.Plugin}, true
	p := newProgress(g.stdout, g.colorful(g.stdout), terminal(g.stdout))
	err = cl.Restart(ctx, req, p.On)
	p.Close()
	p.Summary(err)
	return err
}
