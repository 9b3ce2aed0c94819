package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"runtime/debug"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/planner"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// PlanCmd is `graft plan [FILE]`.
type PlanCmd struct {
	File             string `arg:"" optional:"" help:"The plugins file (default: --file)."`
	Format           string `enum:"text,json,markdown" default:"text" help:"How to print the plan: text (for people, coloured on a terminal), json (format graft.plan/v1, see docs/plan-format.md) or markdown (for a pull request's comment)."`
	JSON             bool   `name:"json" help:"Print the plan as JSON: short for --format json."`
	Out              string `placeholder:"FILE" help:"Also save the plan to FILE, for a later graft apply FILE."`
	DetailedExitcode bool   `name:"detailed-exitcode" help:"Exit 0 when there are no changes, 1 on error, 2 when there are changes."`
	State            string `placeholder:"FILE" help:"Compare with a saved graft status --json document instead of the host's state; its digests of env values are compared under the digest key of the local state dir."`
}

// Run diffs the file against the running state and prints the plan. It
// never starts a host.
func (c *PlanCmd) Run(ctx context.Context, g *Globals) error {
	defer batchGC()()
	format, err := c.format()
	if err != nil {
		return err
	}
	file := g.fileArg(c.File)
	state := c.readState()
	desired, err := g.loadSpec(file)
	if err != nil {
		<-state // a problem of the file comes first, as it always has
		return err
	}
	p, oneTime, err := c.plan(ctx, g, file, desired, <-state)
	if err != nil {
		return err
	}
	if err := c.write(g, p, format); err != nil {
		return err
	}
	if c.Out != "" {
		saved := planner.Save(p, desired, oneTime)
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

// batchGC turns the collector off until the returned function is called,
// but for a memory limit (batchMemoryLimit, unless GOMEMLIMIT set one): a
// plan's heap is nearly all live until the command ends (the parsed file,
// the spec, the state, the plan), so collecting frees little. Collecting
// as often as a daemon does took a quarter of the CPU time of a plan of
// 10,000 plugins; the two collections left at six times the live heap
// took a tenth of the CPU time of a plan of 10,000 new plugins with env,
// and lowered its peak from 173 to 154 MB (bench/README.md, "Planning").
func batchGC() (restore func()) {
	oldLimit := debug.SetMemoryLimit(-1)
	if oldLimit == math.MaxInt64 {
		debug.SetMemoryLimit(batchMemoryLimit)
	}
	old := debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(old)
		debug.SetMemoryLimit(oldLimit)
	}
}

// batchMemoryLimit is the heap at which batchGC's command collects after
// all: a plan of the largest file graft reads (spec.MaxSize: 16,500
// plugins with env and 50,000 uses edges) peaks at 280 MB without.
const batchMemoryLimit = 1 << 30

// format is the format asked for: --json is short for --format json.
func (c *PlanCmd) format() (string, error) {
	if !c.JSON {
		return c.Format, nil
	}
	if c.Format != "text" && c.Format != "json" {
		return "", fmt.Errorf("--json and --format %s: choose one", c.Format)
	}
	return "json", nil
}

// write prints the plan in format.
func (c *PlanCmd) write(g *Globals, p *plan.Plan, format string) error {
	switch format {
	case "json":
		return p.WriteJSON(g.stdout)
	case "markdown":
		return p.WriteMarkdown(g.stdout)
	}
	return p.WriteText(g.stdout, plan.TextOptions{Color: g.colorful(g.stdout)})
}

// stateRead is the --state file, read.
type stateRead struct {
	state *plan.State
	err   error
}

// readState reads the --state file, when there is one, while the caller
// loads the plugins file: on a large project each takes a while, and the
// machine has more than one core to do them on. The channel gives the
// result once.
func (c *PlanCmd) readState() <-chan stateRead {
	out := make(chan stateRead, 1)
	if c.State == "" {
		out <- stateRead{}
		return out
	}
	go func() {
		st, err := plan.ReadState(c.State)
		out <- stateRead{st, err}
	}()
	return out
}

// plan makes the plan: against the saved state file when one is given,
// else by the project's host, which holds the key of its digests of env
// values. Without a host nothing runs, and the plan is made here against
// an empty state; graft plan never starts a host. oneTime is the key of a
// plan made here under a fresh key, which a saved plan carries so that a
// host can check it (docs/plan-format.md).
func (c *PlanCmd) plan(ctx context.Context, g *Globals, file string, desired *spec.Spec, state stateRead) (p *plan.Plan, oneTime *spec.DigestKey, err error) {
	dir := g.stateDir(file)
	if c.State != "" {
		running, err := state.state, state.err
		if err != nil {
			return nil, nil, err
		}
		return planner.AgainstState(desired, c.State, running, dir)
	}
	cl, up, err := g.client(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	if up {
		defer cl.Close()
		raw, err := cl.Plan(ctx, hostapi.Source(spec.SourceOf(desired)))
		if err != nil {
			return nil, nil, err
		}
		p, err := hostPlan(raw)
		return p, nil, err
	}
	fmt.Fprintf(g.stderr, "%s Comparing with an empty state.\n", g.noHost(dir))
	return planner.Alone(desired)
}
