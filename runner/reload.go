package runner

import (
	"context"

	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
)

// reload carries out a reload request on the running generation it
// names (docs/runner-api.md, "Reload"): its process takes its new config
// as the local placement reloads one, or the answer says why not; it
// runs on either way.
func (r *Runner) reload(ctx context.Context, name string, req *runnerapi.Reload) (*runnerapi.Reloaded, error) {
	r.mu.Lock()
	if _, err := r.liveSession(req.Session); err != nil {
		r.mu.Unlock()
		return nil, err
	}
	inst := r.instances[name]
	var p *process
	if inst != nil && inst.cur != nil && inst.cur.gen == req.Generation && inst.cur.state == procRunning {
		p = inst.cur
	}
	r.mu.Unlock()
	if p == nil {
		return nil, kindErr(runnerapi.KindNoInstance, "reload %s: generation %d is not running here", name, req.Generation)
	}
	rl, ok := p.h.(runtime.Reloader)
	if !ok {
		return nil, kindErr(runnerapi.KindInternal, "reload %s: its process cannot be reloaded", name)
	}
	if err := rl.Reload(ctx, req.Spec.WithDefaults()); err != nil {
		return nil, kindErr(runnerapi.KindReloadFailed, "%v", err)
	}
	r.log.Info("reloaded", "instance", name, "generation", p.gen, "pid", p.pid)
	return &runnerapi.Reloaded{Instance: name, Generation: p.gen, PID: p.pid}, nil
}
