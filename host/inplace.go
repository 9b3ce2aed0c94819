package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/graftland/graft/apply"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
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
	switch {
	case err == nil:
		x.h.mu.Lock()
		e.record = plan.Applied(x.desired, name)
		x.h.mu.Unlock()
	case errors.As(err, new(*runtime.ReloadUnconfirmed)):
		// Neither the old config nor the new one is known to be in
		// effect: whatever the file holds next, the plan reloads again.
		x.h.mu.Lock()
		e.record = plan.UnconfirmedReload(e.record, plan.Applied(x.desired, name))
		x.h.mu.Unlock()
	}
	st := e.supervisor.State()
	return apply.Result{Identity: st.Identity, PID: st.PID}, err
}
