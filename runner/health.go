package runner

import (
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
)

// forwardHealth sends each result of the health checks of p, which its
// start asked for and local runs on this machine while p runs, to p's
// session as a health event (docs/runner-api.md, "Health checks"). The
// runner counts nothing and decides nothing: the host does, so that a
// host that loses its runner does not also take the plugin for
// unhealthy.
func (r *Runner) forwardHealth(p *process) {
	defer r.wg.Done()
	hs, ok := p.h.(runtime.HealthSource)
	if !ok {
		return
	}
	for res := range hs.HealthResults() {
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
}
