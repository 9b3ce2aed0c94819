package runner

import (
	"context"
	"errors"

	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
)

// reload carries out a reload request on the running generation it
// names (docs/runner-api.md, "Reload"): its process takes its new config
// as the local placement reloads one, or the answer says why not; it
// runs on either way.
func (r *Runner) reload(ctx context.Context, name string, req *runnerapi.Reload) (*runnerapi.Reloaded, error) {
	p, err := r.running("reload", name, req.Session, req.Generation)
	if err != nil {
		return nil, err
	}
	rl, ok := p.h.(runtime.Reloader)
	if !ok {
		return nil, kindErr(runnerapi.KindInternal, "reload %s: its process cannot be reloaded", name)
	}
	if err := rl.Reload(ctx, req.Spec.WithDefaults()); err != nil {
		kind := runnerapi.KindReloadFailed
		if errors.As(err, new(*runtime.ReloadUnconfirmed)) {
			kind = runnerapi.KindReloadUnconfirmed
		}
		return nil, kindErr(kind, "%v", err)
	}
	r.mu.Lock()
	p.start.Spec = req.Spec
	r.mu.Unlock()
	r.log.Info("reloaded", "instance", name, "generation", p.gen, "pid", p.pid)
	return &runnerapi.Reloaded{Instance: name, Generation: p.gen, PID: p.pid}, nil
}

// running is generation gen of instance name while it runs, for op
// through session sess, which must be live.
func (r *Runner) running(op, name, sess string, gen int64) (*process, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.liveSession(sess); err != nil {
		return nil, err
	}
	inst := r.instances[name]
	if inst == nil || inst.cur == nil || inst.cur.gen != gen || inst.cur.state != procRunning {
		return nil, kindErr(runnerapi.KindNoInstance, "%s %s: generation %d is not running here", op, name, gen)
	}
	return inst.cur, nil
}
