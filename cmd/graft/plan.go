package main

import (
	"bytes"
	"context"
	"fmt"

	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// PlanCmd is `graft plan [FILE]`.
type PlanCmd struct {
	File             string `arg:"" optional:"" help:"The plugins file (default: --file)."`
	JSON             bool   `name:"json" help:"Print the plan as JSON (format graft.plan/v1, see docs/plan-format.md)."`
	Out              string `placeholder:"FILE" help:"Also save the plan to FILE, for a later graft apply FILE."`
	DetailedExitcode bool   `name:"detailed-exitcode" help:"Exit 0 when there are no changes, 1 on error, 2 when there are changes."`
	State            string `placeholder:"FILE" help:"Compare with a saved graft status --json document instead of the host's state."`
}

// Run diffs the file against the running state and prints the plan. It
// never starts a host.
func (c *PlanCmd) Run(ctx context.Context, g *Globals) error {
	file := g.fileArg(c.File)
	desired, err := spec.Load(file)
	if err != nil {
		return err
	}
	running, err := c.running(ctx, g, file)
	if err != nil {
		return err
	}
	p, err := plan.Diff(desired, running)
	if err != nil {
		return err
	}
	if c.JSON {
		err = p.WriteJSON(g.stdout)
	} else {
		err = p.WriteText(g.stdout, plan.TextOptions{Color: g.colorful(g.stdout)})
	}
	if err != nil {
		return err
	}
	if c.Out != "" {
		saved := *p
		saved.Source = &plan.Source{File: desired.File, Dir: desired.Dir, YAML: string(desired.Source)}
		var b bytes.Buffer
		if err := saved.WriteJSON(&b); err != nil {
			return err
		}
		if err := atomicfile.Write(c.Out, b.Bytes(), 0o600); err != nil {
			return fmt.Errorf("save plan: %w", err)
		}
		fmt.Fprintf(g.stderr, "Saved the plan to %s. Apply exactly this plan with: graft apply %s\n", c.Out, c.Out)
	}
	if c.DetailedExitcode && p.HasChanges() {
		return exitCode(2)
	}
	return nil
}

// running is what the plan compares with: the saved state file when one
// is given, else what the project's host runs. Without a host nothing
// runs; graft plan never starts one.
func (c *PlanCmd) running(ctx context.Context, g *Globals, file string) (*plan.State, error) {
	if c.State != "" {
		return plan.ReadState(c.State)
	}
	dir := g.stateDir(file)
	cl, up, err := g.client(ctx, dir)
	if err != nil {
		return nil, err
	}
	if !up {
		fmt.Fprintf(g.stderr, "%s Comparing with an empty state.\n", g.noHost(dir))
		return &plan.State{Plugins: []plan.Record{}}, nil
	}
	defer cl.Close()
	return cl.Status(ctx)
}
