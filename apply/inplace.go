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

// inPlace runs a reload or update step on ex, which must be an InPlace.
func inPlace(ctx context.Context, ex Executor, s plan.Step) (Result, error) {
	in, ok := ex.(InPlace)
	if !ok {
		return Result{}, fmt.Errorf("%s %s: this executor cannot change a plugin in place", s.Op, s.Plugin)
	}
	if s.Op == plan.OpReload {
		return in.Reload(ctx, s.Plugin)
	}
	return in.Update(ctx, s.Plugin)
}
