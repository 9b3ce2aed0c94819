package host

import (
	"context"
	"fmt"

	"github.com/graftland/graft/apply"
	"github.com/graftland/graft/plan"
)

// Reload gives the running plugin its desired spec and reloads it, as its
// reload says (apply.InPlace). A reload that fails is not recorded: the
// next plan shows it again.
func (x executor) Reload(ctx context.Context, name string) (apply.Result, error) {
	return x.inPlace(ctx, name, true)
}

// Update gives the running plugin its desired spec's retry, ready,
// stopSignal and uses, without a restart (apply.InPlace).
func (x executor) Update(ctx context.Context, name string) (apply.Result, error) {
	return x.inPlace(ctx, name, false)
}

// inPlace changes the running plugin name to its desired spec, with a
// reload or not, and records the new spec as what it runs.
func (x executor) inPlace(ctx context.Context, name string, reload bool) (apply.Result, error) {
	p, e := x.desired.Plugins[name], x.h.entry(name)
	if p == nil || e == nil {
		return apply.Result{}, fmt.Errorf("%s: not both running and in the spec being applied", name)
	}
	var err error
	if reload {
		err = e.supervisor.Reload(ctx, p)
	} else {
		err = e.supervisor.Update(ctx, p)
	}
	if err == nil {
		x.h.mu.Lock()
		e.record = plan.Applied(x.desired, name)
		x.h.mu.Unlock()
	}
	st := e.supervisor.State()
	return apply.Result{Identity: st.Identity, PID: st.PID}, err
}
