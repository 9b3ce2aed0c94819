package apply

import (
	"context"
	"fmt"

	"github.com/graftland/graft/plan"
)

// InPlace is an Executor that also changes running plugins without a
// restart: the reload and update steps of a plan (docs/plan-format.md).
type InPlace interface {
	Executor
	// Reload gives the running plugin its desired spec's in-place
	// settings and sends its main process its reloadSignal; instance,
	// pid and generation stay. The same holds of its context as of
	// Start's.
	Reload(ctx context.Context, plugin string) (Result, error)
	// Update gives the running plugin its desired spec's in-place
	// settings (retry, ready, stopSignal, uses), without a signal.
	Update(ctx context.Context, plugin string) (Result, error)
}

// inPlace is the carrier of an op that method of InPlace carries out:
// an executor that is not an InPlace fails the step.
func inPlace(method func(InPlace, context.Context, string) (Result, error)) carrier {
	return func(r *execution, ctx context.Context, s plan.Step) (Result, error) {
		in, ok := r.ex.(InPlace)
		if !ok {
			return Result{}, fmt.Errorf("%s %s: this executor cannot change a plugin in place", s.Op, s.Plugin)
		}
		return method(in, ctx, s.Plugin)
	}
}
