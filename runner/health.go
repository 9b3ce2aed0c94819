package runner

import (
	"time"

	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
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

// healthOf is the health check a start asks for, with graft's defaults
// where it leaves a window out; nil when it asks for none.
func healthOf(h *runnerapi.Health) *spec.Health {
	if h == nil {
		return nil
	}
	ms := func(v int64, def time.Duration) spec.Duration {
		if v <= 0 {
			return spec.FromStd(def)
		}
		return spec.FromStd(time.Duration(v) * time.Millisecond)
	}
	return &spec.Health{TCP: h.TCP, HTTP: h.HTTP, Exec: h.Exec, Interval: ms(h.IntervalMillis, spec.DefaultHealthInterval),
		Timeout: ms(h.TimeoutMillis, spec.DefaultHealthTimeout), StartPeriod: spec.FromStd(time.Duration(max(h.StartPeriodMillis, 0)) * time.Millisecond)}
}
