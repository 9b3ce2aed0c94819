package apply

import (
	"context"
	"fmt"

	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// Swapper is an Executor that can replace a plugin start-first
// (plan.OpSwap, docs/semantics.md "Start-first replacement").
type Swapper interface {
	Executor
	// Swap starts plugin's new process beside the running one, waits until
	// it is ready (and healthy, when it has a health check) and has
	// reached until, then stops the old one as Stop does, and returns. A
	// new process that does not get there is stopped, and the old one
	// runs on: the step fails. reached and ctx are as Start's.
	Swap(ctx context.Context, plugin string, until spec.Condition, reached func(spec.Condition)) (Result, error)
}

// swap replaces the step's plugin start-first: an executor that is no
// Swapper fails the step.
func (r *execution) swap(ctx context.Context, s plan.Step) (Result, error) {
	sw, ok := r.ex.(Swapper)
	if !ok {
		return Result{}, fmt.Errorf("%s %s: this executor cannot replace start-first", s.Op, s.Plugin)
	}
	reached := func(c spec.Condition) { r.reached <- milestone{id: s.ID, until: c} }
	return sw.Swap(ctx, s.Plugin, r.until[s.ID], reached)
}
