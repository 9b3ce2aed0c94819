package runner

import (
	"context"

	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
)

// forwardHealth sends each result of the health checks of p, which its
// start or a later change asked for and local runs on this machine while
// p runs, to p's session as a health event (docs/runner-api.md, "Health
// checks"). The runner counts nothing and decides nothing: the host does,
// so that a host that loses its runner does not also take the plugin for
// unhealthy. A change of the checks (setHealth) closes the old results
// and opens new ones, which it goes on with.
func (r *Runner) forwardHealth(p *process) {
	defer r.wg.Done()
	hs, ok := p.h.(runtime.HealthSource)
	if !ok {
		return
	}
	for {
		results := hs.HealthResults()
		if results == nil { // no checks, until a change brings some
			select {
			case <-p.h.Done():
				return
			case <-p.healthSet:
				continue
			}
		}
		for res := range results {
			ev := runnerapi.Event{Type: runnerapi.EventHealth, Instance: p.name, Generation: p.gen,
				Health: &runnerapi.HealthResult{OK: res.Err == nil, At: res.At}}
			if res.Err != nil {
				ev.Health.Error = res.Err.Error()
			}
			r.mu.Lock()
			s := p.session
			r.mu.Unlock()
			if s != nil {
				s.send(ev)
			}
		}
		select {
		case <-p.h.Done():
			return
		case <-p.healthSet: // the checks changed
		}
	}
}

// setHealth carries out a health request on the running generation it
// names: its checks end, and the request's run from now on (none without
// health), as at a start (docs/runner-api.md, "Health checks").
func (r *Runner) setHealth(ctx context.Context, name string, req *runnerapi.SetHealth) (*runnerapi.HealthSet, error) {
	p, err := r.running("health", name, req.Session, req.Generation)
	if err != nil {
		return nil, err
	}
	hs, ok := p.h.(runtime.HealthSetter)
	if !ok {
		return nil, kindErr(runnerapi.KindInternal, "health %s: its checks cannot change", name)
	}
	var hc *launch.Health
	if req.Health != nil {
		hc = launch.Spec{Health: req.Health}.WithDefaults().Health
	}
	if err := hs.SetHealth(ctx, hc); err != nil {
		return nil, kindErr(runnerapi.KindInternal, "health %s: %v", name, err)
	}
	r.mu.Lock()
	p.start.Spec.Health = req.Health
	r.mu.Unlock()
	select {
	case p.healthSet <- struct{}{}:
	default: // one is pending already
	}
	return &runnerapi.HealthSet{Instance: name, Generation: p.gen}, nil
}
