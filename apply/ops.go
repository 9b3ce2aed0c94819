package apply

import (
	"context"

	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

// carrier carries out one step of its op on the execution's executor.
type carrier func(r *execution, ctx context.Context, s plan.Step) (Result, error)

// carriers is, for each op of a plan (plan.Ops), the executor method that
// carries it out: a new op is a row here, and its method on Executor or
// on an interface beside it, as InPlace is. A step whose op has no row
// fails with "unknown op".
var carriers = map[plan.Op]carrier{
	plan.OpStop:   (*execution).stop,
	plan.OpStart:  (*execution).start,
	plan.OpReload: inPlace(InPlace.Reload),
	plan.OpUpdate: inPlace(InPlace.Update),
	plan.OpSwap:   (*execution).swap,
}

// stop stops the step's plugin. A stop that had to force the plugin but
// whose end was confirmed succeeds, with the CleanupError in its Result
// (docs/stopping.md).
func (r *execution) stop(ctx context.Context, s plan.Step) (Result, error) {
	res, err := r.ex.Stop(ctx, s.Plugin)
	if ce, ok := err.(*runtime.CleanupError); ok && ce.Confirmed() {
		// Forced, but gone: a completed stop, reported as a warning.
		res.Outcome, res.Cleanup, err = ce.Outcome, ce, nil
	}
	return res, err
}

// start starts the step's plugin, as far as a step waiting on it needs,
// reporting each condition it reaches on the way.
func (r *execution) start(ctx context.Context, s plan.Step) (Result, error) {
	reached := func(c spec.Condition) { r.reached <- milestone{id: s.ID, until: c} }
	return r.ex.Start(ctx, s.Plugin, r.until[s.ID], reached)
}
